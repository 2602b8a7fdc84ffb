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

/// What a write costs the database: one round trip (counted by the session itself), and one statement of its own
/// between BEGIN, the locks and COMMIT (counted by the server, `pg_stat_statements`), whatever the state: a keyed
/// favorite, its retry, a favorite of a favorite, a card, an unfavorite and a clear.
@Suite struct WriteStatementsTests {
    /// The statements the server ran in this test's database since `reset`, but for the counting itself.
    static func statements(on pool: DatabasePool) async throws -> [(query: String, calls: Int)] {
        try await pool.query("""
            SELECT query, calls::integer AS calls FROM public.pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND query NOT LIKE '%pg_stat_statements%'
             ORDER BY query
            """).rows.map { (try $0.decode(String.self, column: "query"), try $0.decode(Int.self, column: "calls")) }
    }

    /// What every write sends besides its own statement.
    static func isFrame(_ query: String) -> Bool {
        ["BEGIN", "COMMIT"].contains(query) || query.hasPrefix("WITH gate AS MATERIALIZED")
    }

    @Test func eachKeyedWriteIsOneRoundTripOfOneStatement() async throws {
        let migrator = Migrator(schema: "favorites", migrations: FavoritesMigrations.all)
        try await withTestPool(migrators: [migrator], size: 1, searchPath: "favorites") { pool, _ in
            try await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public")
            let writer = FavoritesWriter(store: FavoritesStore(pool: pool), commits: GroupCommit(pool: pool, leaders: 1),
                                         notifier: EventNotifier(pool: pool, channel: "unheard",
                                                                 logger: Logger(label: "notifier")),
                                         metrics: NOOPMetricsHandler.instance)
            let recent = RecentItems(lifetime: .seconds(600))
            let item = CatalogItem(id: "SK-C-5", experience: .rijksmuseum, title: "The Night Watch")
            recent.remember(try .init(FavoriteSnapshot(item: item)))  // the copy of a moment ago: the write asks the catalog nothing
            let favorite = FavoriteItem(
                writer: writer, catalog: CatalogPeer(baseURL: "http://127.0.0.1:9", httpClient: .shared),
                recent: recent, maximumFavorites: 10)
            let call = FavoriteItem.CatalogCall(bearer: "", logger: Logger(label: "statements"))
            let rijksmuseum = try #require(Experience.all.first { $0.id == .rijksmuseum })
            let flashcards = try #require(Experience.all.first { $0.userWrittenItems })
            func keyed(_ user: UUID) -> WriteRequest {
                let id = UUID()
                return WriteRequest(user: user, eventID: id, id: id, requestID: "statements")
            }
            let writes: [(name: Comment, run: @Sendable (WriteRequest) async throws -> Void)] = [
                ("a keyed favorite", { _ = try await favorite("SK-C-5", in: rijksmuseum, by: $0, call: call) }),
                ("a keyed favorite of a favorite", { _ = try await favorite("SK-C-5", in: rijksmuseum, by: $0, call: call) }),
                ("a keyed card", { _ = try await WriteCard(writer: writer, maximumFavorites: 10)(
                    Card(title: "Owl", facts: ["Hoots", "Flies"]), in: flashcards, by: $0) }),
                ("a keyed unfavorite", { try await UnfavoriteItem(writer: writer)("SK-C-5", in: .rijksmuseum, by: $0) }),
                ("a keyed clear", { try await ClearFavorites(writer: writer)(.flashcards, by: $0) }),
            ]
            // Each session prepares each statement once: a first user's writes pay for that.
            for write in writes { try await write.run(keyed(UUID())) }

            let user = UUID()
            func counted(_ write: () async throws -> Void) async throws -> (roundTrips: Int, statements: [String]) {
                try await pool.query("SELECT public.pg_stat_statements_reset()")
                let before = try await pool.withSession { $0.roundTrips }
                try await write()
                let roundTrips = try await pool.withSession { $0.roundTrips } - before
                let counted = try await Self.statements(on: pool).filter { !Self.isFrame($0.query) }
                return (roundTrips, counted.flatMap { Array(repeating: $0.query, count: $0.calls) })
            }
            for write in writes {
                let request = keyed(user)
                let first = try await counted { try await write.run(request) }
                #expect(first.roundTrips == 1, write.name)
                #expect(first.statements.count == 1, "\(write.name): \(first.statements)")
                let retried = try await counted { try await write.run(request) }
                #expect(retried.roundTrips == 1, "the retry of \(write.name)")
                #expect(retried.statements.count == 1, "the retry of \(write.name): \(retried.statements)")
            }

            let log = try await EventStore.read(FavoritesStore.stream(of: user), pool: pool).map(\.type)
            #expect(log == [FavoriteEvent.addedType, FavoriteEvent.confirmedType, FavoriteEvent.cardWrittenType,
                            FavoriteEvent.removedType, FavoriteEvent.clearedType])
        }
    }
}
