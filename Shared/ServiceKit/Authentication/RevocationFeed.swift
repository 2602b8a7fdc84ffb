import AsyncHTTPClient
import Contracts
import Foundation
import HTTPTypes
import Locking
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// The sessions auth-service has ended recently, polled from `GET /v1/auth/revocations`, so that the access tokens
/// of a logged-out session stop working here within one poll interval instead of at their expiry.
///
/// If auth-service cannot be reached the last list stays in force: tokens of sessions ended meanwhile keep working
/// until they expire (at most the access-token lifetime), and a warning is logged on every failed poll. Until a first
/// list has arrived, a replica cannot tell an ended session from a live one, so it refuses every token with 503 (as
/// it does without signing keys) rather than accept the sessions ended in the last minutes.
public final class RevocationFeed: SessionRevocations, Service, Sendable {
    let url: String
    let httpClient: HTTPClient
    let peerSecret: PeerSecret
    let interval: Duration
    let logger: Logger

    private struct State {
        var revoked: Set<UUID> = []
        var etag: String?
        /// A list has arrived at least once.
        var loaded = false
        /// The poll a caller started because no list had arrived yet; others wait for the same one.
        var pollOnDemand: Task<Void, Never>?
        var lastPollOnDemand: ContinuousClock.Instant?
    }

    private let state = Locked(State())

    public init(authURL: String, httpClient: HTTPClient, peerSecret: PeerSecret, interval: Duration, logger: Logger) {
        url = authURL.trimmingSuffix("/") + "/v1/auth/revocations"
        self.httpClient = httpClient
        self.peerSecret = peerSecret
        self.interval = interval
        self.logger = logger
    }

    public func isRevoked(_ user: AuthenticatedUser) async throws -> Bool {
        if let revoked = lookUp(user) { return revoked }
        await pollBeforeFirstList()
        guard let revoked = lookUp(user) else {
            throw ServiceProblem(.serviceUnavailable, .serviceUnreachable,
                                 "The list of ended sessions cannot be fetched from auth-service yet; please retry shortly.",
                                 headers: [.retryAfter: "1"])
        }
        return revoked
    }

    /// Whether the session is in the list, or nil while no list has arrived.
    private func lookUp(_ user: AuthenticatedUser) -> Bool? {
        state.withLock { $0.loaded ? $0.revoked.contains(user.sessionID) : nil }
    }

    /// Before the first list, a request does not wait for the next scheduled poll: it polls (one poll for all the
    /// requests that come meanwhile, and at most one a second, so a down auth-service is not asked per request).
    private func pollBeforeFirstList() async {
        let poll = state.withLock { state -> Task<Void, Never>? in
            if let running = state.pollOnDemand { return running }
            let now = ContinuousClock.now
            if let last = state.lastPollOnDemand, now - last < .seconds(1) { return nil }
            state.lastPollOnDemand = now
            let task = Task { await self.poll() }
            state.pollOnDemand = task
            return task
        }
        await poll?.value
        state.withLock { $0.pollOnDemand = nil }
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.poll()
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    /// Fetches the list once (conditionally: an unchanged list costs a 304).
    public func poll() async {
        do {
            var request = HTTPClientRequest(url: url)
            peerSecret.add(to: &request.headers)
            if let etag = state.withLock({ $0.etag }) { request.headers.add(name: "If-None-Match", value: etag) }
            let response = try await httpClient.execute(request, timeout: .seconds(2))
            if response.status == .notModified { return }
            guard response.status == .ok else { throw RemoteKeySet.FetchError.status(Int(response.status.code)) }
            let body = try await response.body.collect(upTo: 16 * 1024 * 1024)
            let list = try JSONDecoder().decode(RevokedSessions.self, from: Data(body.readableBytesView))
            let etag = response.headers.first(name: "ETag")
            state.withLock { state in
                state.revoked = Set(list.sessionIds)
                state.etag = etag
                state.loaded = true
            }
        } catch {
            guard !Task.isCancelled else { return }  // a poll cut short by shutdown is not a failure
            logger.warning("cannot poll revoked sessions from auth-service", metadata: ["error": "\(error)"])
        }
    }
}
