import Contracts
import Foundation
import HTTPTypes
import Locking
import Logging
import ServiceKit

/// Keeps a dataset experience's copy (``DatasetSource``, ``DatasetStore``) refreshed from its upstream, where one is
/// configured, once the copy is older than the experience's `refreshEvery`: in the background while a copy is there to
/// serve, before the request when there is none. One replica refreshes at a time (a claim in ``FetchClaims``, taken
/// without waiting: the others serve the copy they have); a refresh that fails leaves the copy as it was.
struct RefreshDataset: Sendable {
    let store: DatasetStore
    let runner: StepRunner
    let claims: FetchClaims
    /// By experience; an experience without an upstream is absent: the loaded copy is all there is.
    let refreshEvery: [ExperienceID: TimeInterval]
    /// When this replica next looks at each copy's age (at most once a minute).
    private let nextCheck = Locked<[ExperienceID: Date]>([:])

    init(store: DatasetStore, runner: StepRunner, claims: FetchClaims, refreshEvery: [ExperienceID: TimeInterval]) {
        self.store = store
        self.runner = runner
        self.claims = claims
        self.refreshEvery = refreshEvery
    }

    static let checkInterval: TimeInterval = 60

    /// Refreshes the copy when it is due; waits for it only when there is no copy yet. The refresh's calls are the
    /// service's own.
    func ifDue(_ source: any DatasetSource, requestID: String, logger: Logger) async throws {
        let now = Date(), experience = source.experience
        let due = nextCheck.withLock { next in
            guard now >= next[experience, default: .distantPast] else { return false }
            next[experience] = now.addingTimeInterval(Self.checkInterval)
            return true
        }
        guard due else { return }
        let lastLoad = try await store.lastLoad(experience)
        let caller = UpstreamCaller.service(requestID: requestID, logger: logger)
        guard let refreshEvery = refreshEvery[experience] else {
            if lastLoad == nil {
                nextCheck.withLock { $0[experience] = nil }
                throw ServiceProblem(.serviceUnavailable, .upstreamUnavailable,
                                     "This catalog's data has not been loaded yet.", headers: [.retryAfter: "60"])
            }
            return
        }
        guard let lastLoad else {
            do {
                try await callAsFunction(source, for: caller)
            } catch {
                nextCheck.withLock { $0[experience] = nil }  // nothing to serve: the next request tries again
                throw error
            }
            return
        }
        if now.timeIntervalSince(lastLoad.at) >= refreshEvery {
            Task { try? await callAsFunction(source, for: caller) }
        }
    }

    /// Reads the whole dataset from the upstream and replaces the copy, unless another replica is at it.
    func callAsFunction(_ source: any DatasetSource, for caller: UpstreamCaller) async throws {
        let key = "dataset|\(source.experience)"
        let claimed = try await claims.claim([key], for: 60).contains(key)
        guard claimed else { return }
        let (claims, logger) = (claims, caller.logger)
        defer { Task { await claims.release([key], logger: logger) } }
        do {
            let items = try await runner.run(source.refresh(), for: caller)
            guard !items.isEmpty else {
                logger.warning("the upstream sent an empty dataset; keeping the copy", metadata: [
                    "experience": "\(source.experience)",
                ])
                return
            }
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
