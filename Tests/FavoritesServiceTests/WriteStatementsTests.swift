@testable import FavoritesService
import AsyncHTTPClient
import Contracts
import CoreMetrics
import EventStore
import Foundation
import Logging
import Postgres
import ServiceKit
import TestSupport
import Testing

/// What a write costs the database, counted by the server itself (`pg_stat_statements`): a keyed favorite, a keyed
/// retry, an unfavorite and a clear each run two statements inside `BEGIN` and `COMMIT`, whatever the state.
@Suite struct WriteStatementsTests {
    /// The statements the server ran in this test's database since `reset`, but for the counting itself.
    static func statements(on pool: DatabasePool) async throws -> [(query: String, calls: Int)] {
        try await pool.query("""
            SELECT query, calls::integer FROM public.pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND query NOT LIKE '%pg_stat_statements%'
             ORDER BY query
            """).rows.map { try $0.decode((String, Int).self) }
    }

    @Test func eachWriteRunsTwoStatementsBetweenBeginAndCommit() async throws {
        let migrator = Migrator(schema: "favorites", migrations: FavoritesMigrations.all)
        try await withTestPool(migrators: [migrator], size: 1, searchPath: "favorites") { pool, _ in
            try await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public")
            let writer = FavoritesWriter(store: FavoritesStore(pool: pool),
                                         notifier: EventNotifier(pool: pool, channel: "unheard"),
                                         metrics: NOOPMetricsHandler.instance)
            let recent = RecentItems(lifetime: .seconds(600))
            let item = CatalogItem(id: "SK-C-5", experience: .rijksmuseum, title: "The Night Watch")
            recent.remember(item)  // the copy of a moment ago: the write asks the catalog nothing
            let favorite = FavoriteItem(
                writer: writer, catalog: CatalogLookup(peer: PeerRequest(baseURL: "http://127.0.0.1:9",
                                                                         httpClient: .shared)),
                recent: recent, maximumFavorites: 10)
            let user = UUID()
            func request(key: String?) -> WriteRequest {
                let id = key.map { _ in UUID() }
                return WriteRequest(user: user, eventID: id, id: id ?? UUID(), requestID: "statements")
            }
            let call = FavoriteItem.CatalogCall(bearer: "", logger: Logger(label: "statements"))
            let rijksmuseum = try #require(Experience.all.first { $0.id == .rijksmuseum })
            let keyed = request(key: "first")

            @Sendable func counted(_ write: () async throws -> Void) async throws -> [(query: String, calls: Int)] {
                try await pool.query("SELECT public.pg_stat_statements_reset()")
                try await write()
                return try await Self.statements(on: pool)
            }
            func expectTwoStatements(_ counted: [(query: String, calls: Int)], _ what: Comment) {
                let control = counted.filter { ["BEGIN", "COMMIT"].contains($0.query) }
                let others = counted.filter { !["BEGIN", "COMMIT"].contains($0.query) }
                #expect(control.map(\.calls) == [1, 1], what)
                #expect(others.map(\.calls).reduce(0, +) == 2, "\(what): \(others.map(\.query))")
                #expect(others.contains { $0.query.contains("favorites_write_state") }, what)
            }

            let created = try await counted { _ = try await favorite("SK-C-5", in: rijksmuseum, by: keyed, call: call) }
            expectTwoStatements(created, "a keyed favorite")
            #expect(created.contains { $0.query.hasPrefix("WITH appended AS") })

            // A retry reads its answer under the lock and writes nothing: one statement, then COMMIT.
            let retried = try await counted { _ = try await favorite("SK-C-5", in: rijksmuseum, by: keyed, call: call) }
            #expect(retried.filter { !["BEGIN", "COMMIT"].contains($0.query) }.map(\.calls) == [1])

            let removed = try await counted {
                try await UnfavoriteItem(writer: writer)("SK-C-5", in: .rijksmuseum, by: request(key: "second"))
            }
            expectTwoStatements(removed, "a keyed unfavorite")
            let cleared = try await counted {
                try await ClearFavorites(writer: writer)(.rijksmuseum, by: request(key: "third"))
            }
            expectTwoStatements(cleared, "a keyed clear")

            let log = try await EventStore.read(FavoritesStore.stream(of: user), pool: pool).map(\.type)
            #expect(log == [FavoriteEvent.addedType, FavoriteEvent.removedType, FavoriteEvent.clearedType])
        }
    }
}

