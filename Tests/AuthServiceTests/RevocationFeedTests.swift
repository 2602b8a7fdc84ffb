import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Locking
import Logging
import NIOCore
import ServiceKit
import Testing

/// The list of ended sessions that other services poll, against a stand-in feed that fails until told otherwise.
@Suite struct RevocationFeedTests {
    final class Feed: Sendable {
        /// nil: the feed answers 503.
        let ended = Locked<[UUID]?>(nil)

        var router: Router<BasicRequestContext> {
            let router = Router()
            router.get("v1/auth/revocations") { _, _ -> Response in
                guard let ended = self.ended.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
                let body = try JSONEncoder().encode(RevokedSessions(sessionIds: ended, windowSeconds: 965))
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
            return router
        }
    }

    /// Before a first list has arrived, no session can be told apart from an ended one: refused with a 503, never
    /// accepted. A request polls by itself, so the first one after the feed answers gets through.
    @Test func untilAFirstListArrivesEveryTokenIsA503() async throws {
        let feed = Feed()
        try await Application(router: feed.router).test(.live) { client in
            let revocations = RevocationFeed(authURL: "http://127.0.0.1:\(client.port!)", httpClient: .shared,
                                             peerSecret: PeerSecret(PeerSecret.localDefault), interval: .seconds(3600), logger: Logger(label: "test"))
            let ended = AuthenticatedUser(userID: UUID(), sessionID: UUID())
            let live = AuthenticatedUser(userID: UUID(), sessionID: UUID())
            await #expect(throws: ServiceProblem.self) { try await revocations.isRevoked(live) }

            feed.ended.withLock { $0 = [ended.sessionID] }
            try await Task.sleep(for: .milliseconds(1100))  // requests poll at most once a second
            #expect(try await revocations.isRevoked(ended))
            #expect(try await !revocations.isRevoked(live))

            // Once a list has arrived, a failing feed leaves it in force.
            feed.ended.withLock { $0 = nil }
            await revocations.poll()
            #expect(try await revocations.isRevoked(ended))
        }
    }
}
