import CatalogProxy
import Contracts
import Foundation
@testable import FavoritesService
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import ReplayUpstream
import ServiceKit
import TestSupport
import Testing

/// favorites-service with its real peers over HTTP: catalog-proxy (itself on the replay of the recorded upstreams),
/// and a stand-in for auth-service that signs the test users' tokens.
struct FavoritesHarness: Sendable {
    let client: any TestClientProtocol
    let database: TestDatabase
    static let authority = TestAuthority()

    struct User: Sendable {
        let id: UUID
        let token: String
    }

    func user() async throws -> User {
        let id = UUID()
        return User(id: id, token: try await Self.authority.token(user: id))
    }

    @discardableResult
    func call(_ method: HTTPRequest.Method, _ path: String, as user: User, headers: HTTPFields = [:]) async throws
        -> TestResponse
    {
        var headers = headers
        headers[.authorization] = "Bearer \(user.token)"
        return try await client.execute(uri: path, method: method, headers: headers) { $0 }
    }

    /// Events in the user's stream, read straight from the table.
    func eventCount(of user: User) async throws -> Int {
        let pool = database.makePool(size: 1)
        defer { Task { await pool.close() } }
        return try await pool.query("""
            SELECT count(*) FROM favorites.events WHERE stream_id = \(FavoritesStore.stream(of: user.id))
            """).single().decode(Int.self, at: 0)
    }

    static func run(catalogURL: String? = nil, _ test: @escaping @Sendable (FavoritesHarness) async throws -> Void)
        async throws
    {
        let replay = try ReplayUpstream(fixtures: fixtures)
        let peers = Router()
        replay.addRoutes(to: peers)
        authority.addRoutes(to: peers)
        try await Application(router: peers).test(.live) { peerClient in
            let peer = "http://127.0.0.1:\(peerClient.port!)"
            try await withTestDatabase { catalogDatabase in
                let catalogReader = testConfigReader(databaseURL: catalogDatabase.connectionString, environment: [
                    "AUTH_URL": peer, "TICKETMASTER_URL": peer, "RIJKSMUSEUM_URL": peer,
                    "TICKETMASTER_API_KEY": "k", "RIJKSMUSEUM_API_KEY": "k", "CATALOG_USER_RATE_PER_SECOND": "1000",
                ])
                let catalog = try await CatalogProxy.buildApplication(reader: catalogReader)
                try await catalog.test(.live) { catalogClient in
                    try await withTestDatabase { database in
                        let reader = testConfigReader(databaseURL: database.connectionString, environment: [
                            "AUTH_URL": peer, "CATALOG_URL": catalogURL ?? "http://127.0.0.1:\(catalogClient.port!)",
                            "ERASURE_POLL_SECONDS": "1",
                        ])
                        let app = try await FavoritesService.buildApplication(reader: reader)
                        try await app.test(.router) { client in
                            try await test(FavoritesHarness(client: client, database: database))
                        }
                    }
                }
            }
        }
    }

    static let fixtures = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appending(path: "shared/fixtures")
}

