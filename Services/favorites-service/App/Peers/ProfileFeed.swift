import AsyncHTTPClient
import Contracts
import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit
import ServiceLifecycle

/// The users' profile changes (experience, preferences, display name), polled from auth-service's peer-only feed
/// (`GET /v1/auth/profile-changes?since=`) and handed to the change streams open on this replica (``ChangeHub``), so
/// that a change made on one device reaches the user's other devices on the stream they already follow.
///
/// Every replica polls, for its own streams. Each poll starts ``overlap`` before the time of the last answer, so a
/// change whose transaction committed after that answer, stamped earlier, is still seen; changes already handed over
/// (by user and version) are not handed over again. auth-service unreachable: polls fail (logged) and resume; a
/// device that reconnects reads the profile itself.
final class ProfileFeed: Service, Sendable {
    let authURL: String
    let peerSecret: PeerSecret
    let httpClient: HTTPClient
    let hub: ChangeHub
    let interval: Duration
    let logger: Logger
    /// How far before the last answer's time a poll starts again.
    static let overlap: TimeInterval = 10

    private struct State {
        var since: Date?
        /// The newest version handed over per user, with its time (forgotten once older than the overlap).
        var delivered: [UUID: (version: Int64, at: Date)] = [:]
    }

    private let state = Locked(State())

    init(authURL: String, peerSecret: PeerSecret, httpClient: HTTPClient, hub: ChangeHub, interval: Duration,
         logger: Logger) {
        self.authURL = authURL.trimmingSuffix("/")
        self.peerSecret = peerSecret
        self.httpClient = httpClient
        self.hub = hub
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.poll()
                } catch where !Task.isCancelled {
                    self.logger.warning("cannot poll profile changes from auth-service", metadata: ["error": "\(error)"])
                } catch {
                    return
                }
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    /// Reads the feed from where the last poll left it, page after page, and hands each new change to the hub.
    func poll() async throws {
        var since = state.withLock { $0.since }
        while true {
            let page = try await changes(since: since)
            for change in page.changes where isNew(change) {
                hub.profileChanged(change)
            }
            guard page.changes.count >= ProfileChanges.pageSize, let last = page.changes.last else {
                state.withLock { state in
                    state.since = page.asOf.addingTimeInterval(-Self.overlap)
                    let horizon = page.asOf.addingTimeInterval(-2 * Self.overlap)
                    state.delivered = state.delivered.filter { $0.value.at >= horizon }
                }
                return
            }
            since = last.changedAt  // a full page: the next one starts at its last change
        }
    }

    /// Whether `change` is newer than what was handed over for its user (and remembers it).
    private func isNew(_ change: ProfileChange) -> Bool {
        state.withLock { state in
            if let known = state.delivered[change.userId], known.version >= change.version { return false }
            state.delivered[change.userId] = (change.version, change.changedAt)
            return true
        }
    }

    private func changes(since: Date?) async throws -> ProfileChanges {
        let query = since.map { "?since=" + PeerSecret.since($0) } ?? ""
        return try await peerSecret.page(ProfileChanges.self, at: authURL + "/v1/auth/profile-changes" + query,
                                         httpClient: httpClient)
    }
}
