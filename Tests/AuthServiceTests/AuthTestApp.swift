@testable import AuthService
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import ServiceKit
import TestSupport
import Testing

/// auth-service on a fresh database, served over real HTTP (so client addresses are real), with cheap bcrypt.
enum AuthTestApp {
    static let migrators = [Migrator(schema: "auth", migrations: AuthMigrations.all)]

    static func withApp(
        environment: [String: String] = [:],
        _ test: @escaping @Sendable (AuthClient, TestDatabase) async throws -> Void
    ) async throws {
        try await withTestDatabase(migrators: migrators) { database in
            // Tests about mail give their own server and a short poll; the others send none (the default port is a
            // developer's running stack, whose inbox they would fill).
            let reader = testConfigReader(
                databaseURL: database.connectionString,
                environment: ["BCRYPT_COST": "4", "MAIL_POLL_MS": "60000"]
                    .merging(environment) { _, override in override }
            )
            let app = try await buildApplication(reader: reader)
            try await app.test(.live) { client in
                try await test(AuthClient(client: client), database)
            }
        }
    }

    static func uniqueEmail(_ name: String = "user") -> String {
        "\(name)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
    }

    static let password = "correct horse battery staple"
}

/// Typed calls to the auth API, returning the raw response for assertions.
struct AuthClient: Sendable {
    let client: any TestClientProtocol

    var port: Int { client.port ?? 0 }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: (any Encodable & Sendable)? = nil,
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = headers
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(bytes: try JSONEncoder().encode(json))
        }
        return try await client.execute(uri: path, method: method, headers: headers, body: body) { $0 }
    }

    /// A GET of a peer-only feed, as the services make it (with the peers' secret).
    func feed(_ path: String, headers: HTTPFields = [:]) async throws -> TestResponse {
        var headers = headers
        headers[PeerSecret.header] = PeerSecret.localDefault
        return try await call(.get, path, headers: headers)
    }

    func signUp(email: String = AuthTestApp.uniqueEmail(), password: String = AuthTestApp.password,
                experience: String = "ticketmaster") async throws -> AuthSession {
        let response = try await call(.post, "/v1/auth/signup",
                                      json: SignUpRequest(email: email, password: password, experience: experience))
        try #require(response.status == .created, "sign up answered \(response.status): \(String(buffer: response.body))")
        return try response.decode(AuthSession.self)
    }

    func signIn(email: String, password: String = AuthTestApp.password, deviceCredential: String? = nil,
                headers: HTTPFields = [:]) async throws -> TestResponse
    {
        try await call(.post, "/v1/auth/login",
                       json: SignInRequest(email: email, password: password, deviceCredential: deviceCredential),
                       headers: headers)
    }

    /// `key`: the refresh's `Idempotency-Key`, which a retry of it sends again.
    func refresh(_ token: String, key: String? = nil) async throws -> TestResponse {
        try await call(.post, "/v1/auth/refresh", json: RefreshRequest(refreshToken: token),
                       headers: key.map { [.idempotencyKey: $0] } ?? [:])
    }
}

