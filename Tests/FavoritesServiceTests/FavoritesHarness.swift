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
    /// The link from favorites-service to catalog-proxy: ``TCPRelay/stop()`` takes the catalog away.
    let catalogLink: TCPRelay
    /// catalog-proxy itself, as the app reaches it, and the replay of the upstreams behind it (to inject faults).
    let catalog: any TestClientProtocol
    let upstreams: ReplayUpstream
    /// Signs the test users' tokens and lists deleted accounts: one per run, so what a test lists no other test sees.
    let authority: TestAuthority

    struct User: Sendable {
        let id: UUID
        let token: String
    }

    func user(emailVerified: Bool? = nil) async throws -> User {
        let id = UUID()
        return User(id: id, token: try await authority.token(user: id, emailVerified: emailVerified))
    }

    @discardableResult
    func call(_ method: HTTPRequest.Method, _ path: String, as user: User, headers: HTTPFields = [:]) async throws
        -> TestResponse
    {
        var headers = headers
        headers[.authorization] = "Bearer \(user.token)"
        return try await client.execute(uri: path, method: method, headers: headers) { $0 }
    }

    /// The types of the events in the user's stream, in order, read straight from the table.
    func eventTypes(of user: User) async throws -> [String] {
        try await withPool { pool in
            try await pool.query("""
                SELECT event_type FROM events WHERE stream_id = \(FavoritesStore.stream(of: user.id)) ORDER BY version
                """).values(String.self)
        }
    }

    func eventCount(of user: User) async throws -> Int {
        try await eventTypes(of: user).count
    }

    /// A pool on the service's database and schema, for looking behind the API.
    func withPool<Value: Sendable>(_ body: (DatabasePool) async throws -> Value) async throws -> Value {
        try await database.makePool(size: 2, searchPath: "favorites").closing(after: body)
    }

    /// `mode`: `.router` calls the routes in process; `.live` serves them on a port (`client.port`), for a test that
    /// needs real connections (a change stream followed by the client library).
    static func run(catalogURL: String? = nil, environment: [String: String] = [:], mode: TestingSetup = .router,
                    _ test: @escaping @Sendable (FavoritesHarness) async throws -> Void) async throws
    {
        let replay = try ReplayUpstream(fixtures: fixtures)
        let authority = TestAuthority()
        let peers = Router()
        replay.addRoutes(to: peers)
        authority.addRoutes(to: peers)
        try await Application(router: peers).test(.live) { peerClient in
            let peer = "http://127.0.0.1:\(peerClient.port!)"
            try await withTestDatabase { catalogDatabase in
                let catalogReader = testConfigReader(databaseURL: catalogDatabase.connectionString, environment: [
                    "AUTH_URL": peer, "TICKETMASTER_URL": peer, "RIJKSMUSEUM_SEARCH_URL": peer,
                    "RIJKSMUSEUM_RECORDS_URL": peer + "/id", "NYT_BOOKS_URL": peer, "NYT_BOOKS_API_KEY": "k",
                    "GOOGLE_BOOKS_URL": peer, "FLASHCARDS_URL": peer,
                    "TICKETMASTER_API_KEY": "k", "CATALOG_USER_RATE_PER_SECOND": "1000",
                    "CATALOG_USER_UPSTREAM_SHARE_PERCENT": "100",
                    // These tests are of favorites: a busy machine's slow replay must not read as an upstream outage.
                    "UPSTREAM_TIMEOUT_MS": "20000", "CATALOG_PAGE_DEADLINE_MS": "20000",
                ])
                // The phones are the loaded dataset, as the stack loads it.
                _ = try await CatalogProxy.loadDataset("mobiles", files: [
                    fixtures.appending(path: "mobiles/harshil64-mobiles-list.json"),
                ], reader: catalogReader)
                let catalog = try await CatalogProxy.buildApplication(reader: catalogReader)
                try await catalog.test(.live) { catalogClient in
                    let link = try TCPRelay(to: "127.0.0.1", port: catalogClient.port!)
                    defer { link.stop() }
                    try await withTestDatabase { database in
                        let reader = testConfigReader(databaseURL: database.connectionString, environment: [
                            "AUTH_URL": peer, "CATALOG_URL": catalogURL ?? "http://127.0.0.1:\(link.port)",
                            "ERASURE_POLL_SECONDS": "1",
                        ].merging(environment) { _, override in override })
                        let app = try await FavoritesService.buildApplication(reader: reader)
                        try await app.test(mode) { client in
                            try await test(FavoritesHarness(client: client, database: database, catalogLink: link,
                                                            catalog: catalogClient, upstreams: replay,
                                                            authority: authority))
                        }
                    }
                }
            }
        }
    }

    static let fixtures = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appending(path: "shared/fixtures")
}


extension Favorite {
    /// The price a list sorts by, as the service takes it from the item (an event's lowest, a phone's): what a test
    /// compares a price order with.
    var sortPrice: Double? { item.event?.priceRanges?.compactMap { $0.min ?? $0.max }.min() ?? item.phone?.price }
}
