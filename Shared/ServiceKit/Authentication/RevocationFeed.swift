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
/// until they expire (at most the access-token lifetime), and a warning is logged on every failed poll.
public final class RevocationFeed: SessionRevocations, Service, Sendable {
    let url: String
    let httpClient: HTTPClient
    let interval: Duration
    let logger: Logger
    private let state = Locked<(revoked: Set<UUID>, etag: String?)>(([], nil))

    public init(authURL: String, httpClient: HTTPClient, interval: Duration, logger: Logger) {
        url = authURL.trimmingSuffix("/") + "/v1/auth/revocations"
        self.httpClient = httpClient
        self.interval = interval
        self.logger = logger
    }

    public func isRevoked(_ user: AuthenticatedUser) async throws -> Bool {
        state.withLock { $0.revoked.contains(user.sessionID) }
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
            if let etag = state.withLock({ $0.etag }) { request.headers.add(name: "If-None-Match", value: etag) }
            let response = try await httpClient.execute(request, timeout: .seconds(2))
            if response.status == .notModified { return }
            guard response.status == .ok else { throw RemoteKeySet.FetchError.status(Int(response.status.code)) }
            let body = try await response.body.collect(upTo: 16 * 1024 * 1024)
            let list = try JSONDecoder().decode(RevokedSessions.self, from: Data(body.readableBytesView))
            let etag = response.headers.first(name: "ETag")
            state.withLock { $0 = (Set(list.sessionIds), etag) }
        } catch {
            logger.warning("cannot poll revoked sessions from auth-service", metadata: ["error": "\(error)"])
        }
    }
}
