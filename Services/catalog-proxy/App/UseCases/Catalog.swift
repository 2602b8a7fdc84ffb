import Contracts
import Foundation
import HTTPTypes
import Logging
import ServiceKit

/// Search and detail for every source: the response cache in front, the source's steps run against the guarded
/// upstreams behind, references resolved into items, and the last copies kept for when an upstream fails.
struct Catalog: Sendable {
    let backends: [ExperienceID: CatalogBackend]
    let runner: StepRunner
    let resolver: ItemResolver
    let cache: ResponseCache
    let kept: KeptItems
    let searchPolicy: CachePolicy
    let detailPolicy: CachePolicy

    /// How long an experience's categories are served from this replica's cache (they change over days).
    static let categoriesPolicy = CachePolicy(ttl: 3600, staleWhileRevalidate: 3600, staleIfError: 7 * 86_400)

    func backend(for experience: String) throws -> CatalogBackend {
        guard let backend = backends[ExperienceID(rawValue: experience)] else {
            throw ServiceProblem(.notFound, .notFound, "There is no experience \"\(experience)\".")
        }
        return backend
    }

    func search(_ backend: CatalogBackend, _ query: SearchQuery, at cursor: PageCursor, user: UUID,
                requestID: String, logger: Logger) async throws -> ResponseCache.Lookup
    {
        let key = "\(backend.experience)|search|\(query.cacheKey)|\(cursor.cacheKey)"
        switch backend {
        case .upstream(let source):
            return try await lookup(key: key, policy: searchPolicy, user: user, logger: logger) {
                let results = try await runner.run(source.search(query, at: cursor), requestID: requestID,
                                                   logger: logger)
                let page = try await page(of: results, from: source, continuing: query, requestID: requestID,
                                          logger: logger)
                return CachedBody(body: try ServiceJSON.encoder.encode(page), isComplete: !page.partial)
            }
        case .dataset(let dataset):
            // Served from PostgreSQL: not an upstream miss, so no user's budget is spent on it.
            return try await lookup(key: key, policy: searchPolicy, user: nil, logger: logger) {
                let page = try await dataset.page(query, at: cursor, requestID: requestID, logger: logger)
                return CachedBody(body: try ServiceJSON.encoder.encode(page))
            }
        }
    }

    /// The experience's categories; an experience without any has none to list (404).
    func categories(_ backend: CatalogBackend, user: UUID, requestID: String, logger: Logger) async throws
        -> ResponseCache.Lookup
    {
        guard case .upstream(let source) = backend, let step = source.categories() else {
            throw ServiceProblem(.notFound, .notFound, "The experience \"\(backend.experience)\" has no categories.")
        }
        return try await lookup(key: "\(source.experience)|categories", policy: Self.categoriesPolicy, user: user,
                                logger: logger) {
            let categories = try await runner.run(step, requestID: requestID, logger: logger)
            return CachedBody(body: try ServiceJSON.encoder.encode(CategoryList(categories: categories)))
        }
    }

    /// The page's items in the source's order: references resolved (as list cells), items as they came.
    private func page(of results: SearchResults, from source: any CatalogSource, continuing query: SearchQuery,
                      requestID: String, logger: Logger) async throws -> CatalogPage
    {
        let references = results.entries.compactMap { entry -> String? in
            if case .reference(let reference) = entry { return reference }
            return nil
        }
        let resolution = await resolver.items(for: references, source: source, requestID: requestID, logger: logger)
        var items: [CatalogItem] = []
        var listed: [CatalogItem] = []
        for entry in results.entries {
            switch entry {
            case .item(let item):
                items.append(item)
                listed.append(item)
            case .reference(let reference):
                if let item = resolution.items[reference] { items.append(source.listing(of: item)) }
            }
        }
        await kept.remember(listed, detailed: false, logger: logger)
        // Some items resolved: the page, marked partial. None did: the upstream's failure, as for any other call.
        if items.isEmpty, let failure = resolution.failures.first { throw failure }
        if !resolution.failures.isEmpty {
            logger.warning("some items of a page could not be fetched", metadata: [
                "missing": "\(resolution.failures.count)", "failure": "\(resolution.failures[0])",
            ])
        }
        let next = results.next?.continuing(query.fingerprint(in: source.experience))
        return CatalogPage(items: items, nextCursor: next?.encoded, partial: !resolution.failures.isEmpty)
    }

    func detail(_ backend: CatalogBackend, id: String, user: UUID, requestID: String, logger: Logger) async throws
        -> ResponseCache.Lookup
    {
        let key = "\(backend.experience)|item|\(id)"
        switch backend {
        case .dataset(let dataset):
            return try await lookup(key: key, policy: detailPolicy, user: nil, logger: logger) {
                CachedBody(body: try ServiceJSON.encoder.encode(
                    try await dataset.item(id, requestID: requestID, logger: logger)))
            }
        case .upstream(let source):
            let kept = kept
            return try await lookup(key: key, policy: detailPolicy, user: user, logger: logger) {
                try await detailBody(source, id: id, requestID: requestID, logger: logger)
            } fallback: {
                // No copy in this replica's cache: the last copy any replica kept, from a search, detail or resolution.
                guard let copy = await kept.copy(experience: source.experience, id: id, logger: logger),
                      let body = try? ServiceJSON.encoder.encode(copy.item)
                else { return nil }
                return (CachedBody(body: body), copy.age)
            }
        }
    }

    /// The item as a list cell shows it (`view=cell`, what favorites-service keeps of a favorite): the source's own
    /// cell where it has one, cached apart from the detail; else the detail, trimmed (``CatalogBackend/cell(of:)``).
    func cell(_ backend: CatalogBackend, id: String, user: UUID, requestID: String, logger: Logger) async throws
        -> ResponseCache.Lookup
    {
        guard case .upstream(let source) = backend, let step = source.cell(id: id) else {
            var lookup = try await detail(backend, id: id, user: user, requestID: requestID, logger: logger)
            let item = try ServiceJSON.decoder.decode(CatalogItem.self, from: lookup.value.body)
            lookup.value = CachedBody(body: try ServiceJSON.encoder.encode(backend.cell(of: item)),
                                      isComplete: lookup.value.isComplete)
            return lookup
        }
        let kept = kept
        return try await lookup(key: "\(source.experience)|cell|\(id)", policy: detailPolicy, user: user,
                                logger: logger) {
            switch try await runner.run(step, requestID: requestID, logger: logger) {
            case .item(let item): return CachedBody(body: try ServiceJSON.encoder.encode(item))
            case .incomplete(let item): return CachedBody(body: try ServiceJSON.encoder.encode(item), isComplete: false)
            case .notFound, .reference: throw UpstreamFailure.notFound
            }
        } fallback: {
            guard let copy = await kept.copy(experience: source.experience, id: id, logger: logger),
                  let body = try? ServiceJSON.encoder.encode(source.listing(of: copy.item))
            else { return nil }
            return (CachedBody(body: body), copy.age)
        }
    }

    private func detailBody(_ source: any CatalogSource, id: String, requestID: String, logger: Logger) async throws
        -> CachedBody
    {
        // A resolved item kept by any replica answers without an upstream call; a book's detail builds on its listed
        // copy.
        let copy = source.resolvesReferences || source.detailBuildsOnListedCopy
            ? await kept.copy(experience: source.experience, id: id, logger: logger) : nil
        if let copy, copy.isFresh {
            return CachedBody(body: try ServiceJSON.encoder.encode(copy.item))
        }
        let known = source.detailBuildsOnListedCopy ? copy?.item : nil
        switch try await runner.run(source.detail(id: id, known: known), requestID: requestID, logger: logger) {
        case .item(let item):
            // A detail built on the listed copy is not kept over it: the next list's facts (a book's new rank) must
            // reach the next detail.
            if !source.detailBuildsOnListedCopy { await kept.remember([item], detailed: true, logger: logger) }
            return CachedBody(body: try ServiceJSON.encoder.encode(item))
        case .incomplete(let item):
            return CachedBody(body: try ServiceJSON.encoder.encode(item), isComplete: false)
        case .reference(let reference):
            let item = try await resolver.item(for: reference, source: source, requestID: requestID, logger: logger)
            guard let item, item.id == id else { throw UpstreamFailure.notFound }
            return CachedBody(body: try ServiceJSON.encoder.encode(item))
        case .notFound:
            await kept.forget(experience: source.experience, id: id, logger: logger)
            throw UpstreamFailure.notFound
        }
    }

    /// The cached or loaded body for `key`; when the upstream fails (other than with "no such item") and the cache has
    /// no copy, `fallback`'s, served as stale.
    /// The load's upstream calls spend `user`'s share of each upstream's budget (``UpstreamCaller``); nil for loads
    /// that make none.
    private func lookup(key: String, policy: CachePolicy, user: UUID?, logger: Logger,
                        load: @escaping @Sendable () async throws -> CachedBody,
                        fallback: () async -> (body: CachedBody, age: Int)? = { nil }) async throws
        -> ResponseCache.Lookup
    {
        do {
            let lookup = try await UpstreamCaller.$user.withValue(user) {
                let value = { try await cache.value(for: key, policy: policy,
                                                    isDefinitive: { ($0 as? UpstreamFailure) == .notFound }, load: load) }
                do {
                    return try await value()
                } catch UpstreamFailure.userShareSpent {
                    // The load may have been another user's, joined in flight: once more, as this user's own (if the
                    // share spent was this user's, it is refused again before any upstream call).
                    return try await value()
                }
            }
            if lookup.freshness == .stale {
                logger.warning("upstream failed; serving the last good copy", metadata: ["age_seconds": "\(lookup.age)"])
            }
            return lookup
        } catch let failure as UpstreamFailure {
            if failure != .notFound {
                // Never the upstream's body: Ticketmaster echoes the API key in some of its errors.
                logger.warning("upstream request failed", metadata: ["failure": "\(failure)"])
                if let (body, age) = await fallback() {
                    logger.warning("serving the last copy seen of the item", metadata: ["age_seconds": "\(age)"])
                    return ResponseCache.Lookup(value: body, freshness: .stale, age: age, remainingTTL: 0)
                }
            }
            throw failure
        }
    }
}
