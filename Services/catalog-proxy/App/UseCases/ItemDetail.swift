import Contracts
import Foundation
import Logging
import ServiceKit

/// `GET /v1/catalog/{experience}/items/{id}`: one item's detail, from this replica's cache (``ResponseCache``) or
/// loaded: a resolved copy any replica kept while it is fresh, else the source's detail run against its upstreams for
/// the user (a book's detail built on its listed copy); a dataset's item read from its copy. When the upstream fails
/// and this replica has no copy, the last copy any replica kept is served, as stale.
struct ItemDetail: Sendable {
    let cache: ResponseCache
    let runner: StepRunner
    let resolver: ItemResolver
    let kept: KeptItems
    let datasets: DatasetStore
    let refreshDataset: RefreshDataset
    let policy: CachePolicy

    func callAsFunction(_ backend: CatalogBackend, id: String, for caller: UpstreamCaller) async throws
        -> ResponseCache.Lookup
    {
        let key = "\(backend.experience)|item|\(id)"
        switch backend {
        case .dataset(let source):
            let (datasets, refreshDataset) = (datasets, refreshDataset)
            return try await cache.lookup(key, policy: policy, logger: caller.logger) {
                try await refreshDataset.ifDue(source, requestID: caller.requestID, logger: caller.logger)
                guard let item = try await datasets.item(source.experience, id: id) else {
                    throw UpstreamFailure.notFound
                }
                return CachedBody(body: try ServiceJSON.encoder.encode(item))
            }
        case .upstream(let source):
            let kept = kept
            return try await cache.lookup(key, policy: policy, logger: caller.logger) {
                try await load(source, id: id, for: caller)
            } fallback: {
                // No copy in this replica's cache: the last copy any replica kept, from a search, detail or resolution.
                guard let copy = await kept.copy(experience: source.experience, id: id, logger: caller.logger),
                      let body = try? ServiceJSON.encoder.encode(copy.item)
                else { return nil }
                return (CachedBody(body: body), copy.age)
            }
        }
    }

    private func load(_ source: any CatalogSource, id: String, for caller: UpstreamCaller) async throws -> CachedBody {
        // A resolved item kept by any replica answers without an upstream call; a book's detail builds on its listed
        // copy.
        let copy = source.resolvesReferences || source.detailBuildsOnListedCopy
            ? await kept.copy(experience: source.experience, id: id, logger: caller.logger) : nil
        if let copy, copy.isFresh {
            return CachedBody(body: try ServiceJSON.encoder.encode(copy.item))
        }
        let known = source.detailBuildsOnListedCopy ? copy?.item : nil
        switch try await runner.run(source.detail(id: id, known: known), for: caller) {
        case .item(let item):
            // A detail built on the listed copy is not kept over it: the next list's facts (a book's new rank) must
            // reach the next detail.
            if !source.detailBuildsOnListedCopy { await kept.remember([item], detailed: true, logger: caller.logger) }
            return CachedBody(body: try ServiceJSON.encoder.encode(item))
        case .incomplete(let item):
            return CachedBody(body: try ServiceJSON.encoder.encode(item), isComplete: false)
        case .reference(let reference):
            let item = try await resolver.item(for: reference, source: source, caller: caller)
            guard let item, item.id == id else { throw UpstreamFailure.notFound }
            return CachedBody(body: try ServiceJSON.encoder.encode(item))
        case .notFound:
            await kept.forget(experience: source.experience, id: id, logger: caller.logger)
            throw UpstreamFailure.notFound
        }
    }
}
