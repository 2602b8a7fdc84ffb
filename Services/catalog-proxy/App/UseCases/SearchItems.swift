import Contracts
import Foundation
import Logging
import ServiceKit

/// `GET /v1/catalog/{experience}/items`: a page of an experience's items (a search, a browse, a category), from this
/// replica's cache (``ResponseCache``) or loaded: a source's search run against its upstreams for the user, the
/// references it lists resolved into list cells (``ItemResolver``), the items kept for every replica (``KeptItems``);
/// a dataset's page read from its copy.
struct SearchItems: Sendable {
    let cache: ResponseCache
    let runner: StepRunner
    let resolver: ItemResolver
    let kept: KeptItems
    let datasets: DatasetStore
    let refreshDataset: RefreshDataset
    let policy: CachePolicy

    func callAsFunction(_ backend: CatalogBackend, _ query: SearchQuery, at cursor: PageCursor,
                        for caller: UpstreamCaller) async throws -> ResponseCache.Lookup
    {
        let key = "\(backend.experience)|search|\(query.cacheKey)|\(cursor.cacheKey)"
        return try await cache.lookup(key, policy: policy, logger: caller.logger) {
            switch backend {
            case .upstream(let source):
                let results = try await runner.run(source.search(query, at: cursor), for: caller)
                let page = try await page(of: results, from: source, continuing: query, for: caller)
                return CachedBody(body: try ServiceJSON.encoder.encode(page), isComplete: !page.partial)
            case .dataset(let source):
                return CachedBody(body: try ServiceJSON.encoder.encode(
                    try await datasetPage(source, query, at: cursor, caller: caller)))
            }
        }
    }

    /// The page's items in the source's order: references resolved (as list cells), items as they came.
    private func page(of results: SearchResults, from source: any CatalogSource, continuing query: SearchQuery,
                      for caller: UpstreamCaller) async throws -> CatalogPage
    {
        let references = results.entries.compactMap { entry -> String? in
            if case .reference(let reference) = entry { return reference }
            return nil
        }
        let resolution = await resolver.items(for: references, source: source, caller: caller)
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
        await kept.remember(listed, detailed: false, logger: caller.logger)
        // Some items resolved: the page, marked partial. None did: the upstream's failure, as for any other call.
        if items.isEmpty, let failure = resolution.failures.first { throw failure }
        if !resolution.failures.isEmpty {
            caller.logger.warning("some items of a page could not be fetched", metadata: [
                "missing": "\(resolution.failures.count)", "failure": "\(resolution.failures[0])",
            ])
        }
        let next = results.next?.continuing(query.fingerprint(in: source.experience))
        return CatalogPage(items: items, nextCursor: next?.encoded, partial: !resolution.failures.isEmpty)
    }

    /// Served from PostgreSQL: no upstream call, so no user's budget is spent on it.
    private func datasetPage(_ source: any DatasetSource, _ query: SearchQuery, at cursor: PageCursor,
                             caller: UpstreamCaller) async throws -> CatalogPage
    {
        try await refreshDataset.ifDue(source, requestID: caller.requestID, logger: caller.logger)
        let (items, hasMore) = try await datasets.page(
            source.experience, containing: query.text, sortedBy: query.sort, offset: cursor.page * cursor.pageSize,
            limit: cursor.pageSize)
        var next = cursor.continuing(query.fingerprint(in: source.experience))
        next.page += 1
        return CatalogPage(items: items.map(source.listing), nextCursor: hasMore ? next.encoded : nil)
    }
}
