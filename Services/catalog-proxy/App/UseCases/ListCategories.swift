import Contracts
import Foundation
import HTTPTypes
import Logging
import ServiceKit

/// `GET /v1/catalog/{experience}/categories`: the experience's categories, from this replica's cache for an hour
/// (they change over days) or asked of its upstream for the user; an experience without any has none to list (404).
struct ListCategories: Sendable {
    let cache: ResponseCache
    let runner: StepRunner

    static let policy = CachePolicy(ttl: 3600, staleWhileRevalidate: 3600, staleIfError: 7 * 86_400)

    func callAsFunction(_ backend: CatalogBackend, for caller: UpstreamCaller) async throws -> ResponseCache.Lookup {
        guard case .upstream(let source) = backend, let step = source.categories() else {
            throw ServiceProblem(.notFound, .notFound, "The experience \"\(backend.experience)\" has no categories.")
        }
        let runner = runner
        return try await cache.lookup("\(source.experience)|categories", policy: Self.policy, logger: caller.logger) {
            let categories = try await runner.run(step, for: caller)
            return CachedBody(body: try ServiceJSON.encoder.encode(CategoryList(categories: categories)))
        }
    }
}
