import Contracts
import Foundation
import HTTPTypes
import Locking
import Logging
import ServiceKit

/// A dataset experience (``DatasetSource``): lists and details from its copy in PostgreSQL, and the copy refreshed
/// from the upstream, when one is configured, once it is older than `refreshEvery`: in the background while a copy
/// is there to serve, before the request when there is none. One replica refreshes at a time (``FetchClaims``);
/// a refresh that fails leaves the copy as it was.
struct DatasetCatalog: Sendable {
    let source: any DatasetSource
    let store: DatasetStore
    let runner: StepRunner
    let claims: FetchClaims
    /// Nil when no upstream is configured: the loaded copy is all there is.
    let refreshEvery: TimeInterval?
    /// When this replica next looks at the copy's age (at most once a minute).
    private let nextCheck = Locked(Date.distantPast)

    init(source: any DatasetSource, store: DatasetStore, runner: StepRunner, claims: FetchClaims,
         refreshEvery: TimeInterval?) {
        self.source = source
        self.store = store
        self.runner = runner
        self.claims = claims
        self.refreshEvery = refreshEvery
    }

    static let checkInterval: TimeInterval = 60

    func page(_ query: SearchQuery, at cursor: PageCursor, requestID: String, logger: Logger) async throws
        -> CatalogPage
    {
        try await refreshIfDue(requestID: requestID, logger: logger)
        let (items, hasMore) = try await store.page(
            source.experience, containing: query.text, sortedBy: query.sort, offset: cursor.page * cursor.pageSize,
            limit: cursor.pageSize)
        var next = cursor.continuing(query.fingerprint(in: source.experience))
        next.page += 1
        return CatalogPage(items: items.map(source.listing), nextCursor: hasMore ? next.encoded : nil)
    }

    func item(_ id: String, requestID: String, logger: Logger) async throws -> CatalogItem {
        try await refreshIfDue(requestID: requestID, logger: logger)
        guard let item = try await store.item(source.experience, id: id) else { throw UpstreamFailure.notFound }
        return item
    }

    /// Refreshes the copy when it is due; waits for it only when there is no copy yet.
    private func refreshIfDue(requestID: String, logger: Logger) async throws {
        let now = Date()
        let due = nextCheck.withLock { next in
            guard now >= next else { return false }
            next = now.addingTimeInterval(Self.checkInterval)
            return true
        }
        guard due else { return }
        let lastLoad = try await store.lastLoad(source.experience)
        guard let refreshEvery else {
            if lastLoad == nil {
                nextCheck.withLock { $0 = .distantPast }
                throw ServiceProblem(.serviceUnavailable, .upstreamUnavailable,
                                     "This catalog's data has not been loaded yet.", headers: [.retryAfter: "60"])
            }
            return
        }
        guard let lastLoad else {
            do {
                try await refresh(requestID: requestID, logger: logger)
            } catch {
                nextCheck.withLock { $0 = .distantPast }  // nothing to serve: the next request tries again
                throw error
            }
            return
        }
        if now.timeIntervalSince(lastLoad.at) >= refreshEvery {
            Task { try? await refresh(requestID: requestID, logger: logger) }
        }
    }

    /// Reads the whole dataset from the upstream and replaces the copy, unless another replica is at it.
    func refresh(requestID: String, logger: Logger) async throws {
        let key = "dataset|\(source.experience)"
        let claimed = try await claims.claim([key], for: 60).contains(key)
        guard claimed else { return }
        defer { Task { await claims.release([key], logger: logger) } }
        do {
            let items = try await runner.run(source.refresh(), requestID: requestID, logger: logger)
            guard !items.isEmpty else {
                logger.warning("the upstream sent an empty dataset; keeping the copy", metadata: [
                    "experience": "\(source.experience)",
                ])
                return
            }
            let source = source
            try await store.replace(source.experience, with: items, origin: "upstream",
                                    searchableText: { source.searchableText(of: $0) })
            logger.info("dataset refreshed from the upstream", metadata: [
                "experience": "\(source.experience)", "items": "\(items.count)",
            ])
        } catch {
            logger.warning("could not refresh a dataset; keeping the copy", metadata: [
                "experience": "\(source.experience)", "error": "\(error)",
            ])
            throw error
        }
    }
}
