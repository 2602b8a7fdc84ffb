import Contracts
import Foundation
import Logging
import ServiceKit

/// `GET /v1/catalog/{experience}/items/{id}?view=cell`: the item as a list cell shows it, what favorites-service keeps
/// of a favorite. The source's own cell where it has one (``CatalogSource/cell(id:)``), cached apart from the detail;
/// else the detail (``ItemDetail``), trimmed (``CatalogBackend/cell(of:)``).
struct ItemCell: Sendable {
    let detail: ItemDetail
    let cache: ResponseCache
    let runner: StepRunner
    let kept: KeptItems
    let policy: CachePolicy

    func callAsFunction(_ backend: CatalogBackend, id: String, for caller: UpstreamCaller) async throws
        -> ResponseCache.Lookup
    {
        guard case .upstream(let source) = backend, let step = source.cell(id: id) else {
            var lookup = try await detail(backend, id: id, for: caller)
            let item = try ServiceJSON.decoder.decode(CatalogItem.self, from: lookup.value.body)
            lookup.value = CachedBody(body: try ServiceJSON.encoder.encode(backend.cell(of: item)),
                                      isComplete: lookup.value.isComplete)
            lookup.etag = cache.tag(lookup.value.body)
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
}
