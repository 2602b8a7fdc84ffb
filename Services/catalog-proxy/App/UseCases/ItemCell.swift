import Contracts
import Foundation
import Locking
import Logging
import ServiceKit

/// `GET /v1/catalog/{experience}/items/{id}?view=cell`: the item as a list cell shows it, what favorites-service keeps
/// of a favorite. The source's own cell where it has one (``CatalogSource/cell(id:)``), cached apart from the detail;
/// else the detail (``ItemDetail``), trimmed (``CatalogBackend/cell(of:)``) once per copy of the detail: a detail served
/// again from the cache is answered with the cell bytes trimmed from it before, without decoding it.
struct ItemCell: Sendable {
    let detail: ItemDetail
    let cache: ResponseCache
    let runner: StepRunner
    let kept: KeptItems
    let policy: CachePolicy
    /// A detail's validator → its trimmed cell and the cell's. Bounded: when full it starts over, which costs only
    /// trimming again.
    private let trimmed = Locked<[String: (body: Data, etag: String)]>([:])
    private static let trimmedCapacity = 4096

    init(detail: ItemDetail, cache: ResponseCache, runner: StepRunner, kept: KeptItems, policy: CachePolicy) {
        (self.detail, self.cache, self.runner, self.kept, self.policy) = (detail, cache, runner, kept, policy)
    }

    func callAsFunction(_ backend: CatalogBackend, id: String, for caller: UpstreamCaller) async throws
        -> ResponseCache.Lookup
    {
        guard case .upstream(let source) = backend, let step = source.cell(id: id) else {
            var lookup = try await detail(backend, id: id, for: caller)
            let cell = try trimmed.withLock { $0[lookup.etag] } ?? trim(lookup, of: backend)
            (lookup.value.body, lookup.etag) = cell
            return lookup
        }
        let (runner, kept) = (runner, kept)
        return try await cache.lookup("\(source.experience)|cell|\(id)", policy: policy, logger: caller.logger) {
            switch try await runner.run(step, for: caller) {
            case .item(let item): return CachedBody(body: try ServiceJSON.encoder.encode(item))
            case .incomplete(let item): return CachedBody(body: try ServiceJSON.encoder.encode(item), isComplete: false)
            case .notFound, .reference: throw UpstreamFailure.notFound
            }
        } fallback: {
            guard let copy = await kept.copy(experience: source.experience, id: id, logger: caller.logger),
                  let body = try? ServiceJSON.encoder.encode(source.listing(of: copy.item))
            else { return nil }
            return (CachedBody(body: body), copy.age)
        }
    }

    /// The detail's cell, remembered under the detail's validator.
    private func trim(_ lookup: ResponseCache.Lookup, of backend: CatalogBackend) throws -> (body: Data, etag: String) {
        let item = try ServiceJSON.decoder.decode(CatalogItem.self, from: lookup.value.body)
        let body = try ServiceJSON.encoder.encode(backend.cell(of: item))
        let cell = (body: body, etag: cache.tag(body))
        trimmed.withLock { trimmed in
            if trimmed.count >= Self.trimmedCapacity { trimmed.removeAll(keepingCapacity: true) }
            trimmed[lookup.etag] = cell
        }
        return cell
    }
}
