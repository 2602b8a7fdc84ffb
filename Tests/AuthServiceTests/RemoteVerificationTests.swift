import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Logging
import ServiceKit
import Testing

/// Another service verifying auth-service's tokens on its own, as favorites-service will: keys from the JWKS over
/// HTTP, revocations from the polled feed.
@Suite struct RemoteVerificationTests {
    struct Peer {
        let keys: RemoteKeySet
        let feed: RevocationFeed
        let router: Router<AppRequestContext>
    }

    static func peer(authPort: Int) -> Peer {
        let url = "http://127.0.0.1:\(authPort)"
        let logger = Logger(label: "peer")
        let keys = RemoteKeySet(authURL: url, httpClient: .shared, logger: logger)
        let feed = RevocationFeed(authURL: url, httpClient: .shared, interval: .seconds(3600), logger: logger)
        let router = Router(context: AppRequestContext.self)
        router.addMiddleware { ProblemMiddleware(routes: RouteTable(), maxBodyBytes: 1024) }
        router.group("v1/peer")
            .add(middleware: AuthenticationMiddleware(verifier: AccessTokenVerifier(keys: keys, revocations: feed)))
            .group(context: AuthenticatedContext.self)
            .get("whoami") { _, context in context.user.userID.uuidString.lowercased() }
        return Peer(keys: keys, feed: feed, router: router)
    }

    @Test func anotherServiceAcceptsLiveTokensAndRefusesEndedSessions() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            let other = try await api.signUp()
            let peer = Self.peer(authPort: api.port)
            let feed = peer.feed
            try await Application(router: peer.router).test(.router) { client in
                func whoami(_ token: String?) async throws -> TestResponse {
                    var headers = HTTPFields()
                    if let token { headers[.authorization] = "Bearer \(token)" }
                    return try await client.execute(uri: "/v1/peer/whoami", method: .get, headers: headers) { $0 }
                }
                let accepted = try await whoami(session.accessToken)
                #expect(accepted.status == .ok)
                #expect(String(buffer: accepted.body) == session.user.id.uuidString.lowercased())
                #expect(try await whoami(nil).status == .unauthorized)
                #expect(try await whoami(session.refreshToken).status == .unauthorized)

                _ = try await api.call(.post, "/v1/auth/logout", token: session.accessToken)
                await feed.poll()
                let refused = try await whoami(session.accessToken)
                #expect(refused.status == .unauthorized)
                #expect(String(buffer: refused.body).contains("invalid-token"))
                #expect(try await whoami(other.accessToken).status == .ok)
            }
        }
    }
}
