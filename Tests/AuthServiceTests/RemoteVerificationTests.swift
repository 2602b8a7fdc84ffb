import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceKit
import TestSupport
import Testing

/// Another service verifying auth-service's tokens on its own, as favorites-service does: a service built by the kit
/// with auth-service as a required peer gets the authenticator (keys from the JWKS over HTTP, revocations polled).
@Suite struct RemoteVerificationTests {
    static let peerDefaults = ServiceDefaults(
        name: "peer-test", apiPrefix: "/v1/peer", port: 0, schema: "peer", databaseRole: "peer", requiredPeers: [.auth]
    )

    static func withPeer(authPort: Int, _ test: @escaping @Sendable (any TestClientProtocol) async throws -> Void)
        async throws
    {
        try await withTestDatabase { database in
            let configuration = try testServiceConfiguration(
                defaults: peerDefaults, databaseURL: database.connectionString,
                environment: ["AUTH_URL": "http://127.0.0.1:\(authPort)", "REVOCATION_POLL_MS": "100"]
            )
            let core = ServiceCore(configuration: configuration)
            let authentication = PeerAuthentication(core: core)
            let router = try core.router()
            router.group("v1/peer").add(middleware: authentication.middleware).group(context: AuthenticatedContext.self)
                .get("whoami") { _, context in context.user.userID.uuidString.lowercased() }
            let app = core.application(router: router, migrations: [], background: [authentication.revocations])
            try await app.test(.live, test)
        }
    }

    @Test func anotherServiceAcceptsLiveTokensAndRefusesEndedSessionsWithinSeconds() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            let other = try await api.signUp()
            try await Self.withPeer(authPort: api.port) { client in
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
                var refused: TestResponse?
                for _ in 0..<50 {  // the feed polls every 100 ms here; give it up to 5 s
                    let response = try await whoami(session.accessToken)
                    if response.status == .unauthorized { refused = response; break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                let problem = try #require(refused).body
                #expect(String(buffer: problem).contains("invalid-token"))
                #expect(try await whoami(other.accessToken).status == .ok)
            }
        }
    }
}
