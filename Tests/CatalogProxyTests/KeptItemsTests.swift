@testable import CatalogProxy
import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit
import TestSupport
import Testing

/// The last copies of items every replica shares, on a real PostgreSQL: how long each kind lives, which copy wins, and
/// the migration that merged the two tables that kept them.
@Suite struct KeptItemsTests {
    static let logger = Logger(label: "kept-items-tests")
    static let staleIfError: TimeInterval = 3600
    static let recordLife: TimeInterval = 86_400

    static func withKeptItems(_ body: (KeptItems, DatabasePool) async throws -> Void) async throws {
        try await withTestPool(migrators: [Migrator(schema: "catalog", migrations: CatalogMigrations.all)],
                               searchPath: "catalog") { pool, _ in
            try await body(KeptItems(pool: pool, staleIfError: staleIfError, recordLife: recordLife), pool)
        }
    }

    /// Moves an item's copy `seconds` into the past.
    static func age(_ id: String, by seconds: TimeInterval, _ pool: DatabasePool) async throws {
        try await pool.query("""
            UPDATE kept_items SET kept_at = kept_at - make_interval(secs => \(seconds)) WHERE item_id = \(id)
            """)
    }

    static func event(_ id: String, title: String) -> CatalogItem {
        CatalogItem(id: id, experience: .ticketmaster, title: title)
    }

    static func artwork(_ id: String, title: String) -> CatalogItem {
        CatalogItem(id: id, experience: .rijksmuseum, title: title)
    }

    @Test func aCopySeenServesForTheStaleWindowAndIsNeverFresh() async throws {
        try await Self.withKeptItems { kept, pool in
            await kept.remember([Self.event("e1", title: "Concert")], detailed: false, logger: Self.logger)
            let copy = try #require(await kept.copy(experience: .ticketmaster, id: "e1", logger: Self.logger))
            #expect(copy.item.title == "Concert")
            #expect(!copy.isFresh)
            try await Self.age("e1", by: Self.staleIfError - 60, pool)
            #expect(await kept.copy(experience: .ticketmaster, id: "e1", logger: Self.logger) != nil)
            try await Self.age("e1", by: 120, pool)
            #expect(await kept.copy(experience: .ticketmaster, id: "e1", logger: Self.logger) == nil)
        }
    }

    @Test func aResolvedCopyIsFreshForTheRecordsLifeThenStaleThenGone() async throws {
        try await Self.withKeptItems { kept, pool in
            try await kept.keep(Self.artwork("SK-C-5", title: "The Night Watch"), resolvedFrom: "ref-5")
            func byReference() async throws -> KeptItems.Copy? {
                try await kept.copies(resolvedFrom: ["ref-5", "ref-unknown"], in: .rijksmuseum)["ref-5"]
            }
            func byID() async -> KeptItems.Copy? {
                await kept.copy(experience: .rijksmuseum, id: "SK-C-5", logger: Self.logger)
            }
            #expect(try await byReference()?.isFresh == true)
            #expect(await byID()?.isFresh == true)

            try await Self.age("SK-C-5", by: Self.recordLife + 60, pool)
            #expect(try await byReference()?.isFresh == false)  // stands in only when resolving again fails
            #expect(await byID()?.item.title == "The Night Watch")
            #expect(await byID()?.isFresh == false)

            try await Self.age("SK-C-5", by: Self.staleIfError, pool)
            #expect(try await byReference() == nil)
            #expect(await byID() == nil)
        }
    }

    @Test func aSearchResultNeverReplacesADetailOrAResolution() async throws {
        try await Self.withKeptItems { kept, pool in
            await kept.remember([Self.event("e1", title: "Concert, with the venue")], detailed: true, logger: Self.logger)
            await kept.remember([Self.event("e1", title: "Concert"), Self.event("e2", title: "Play"),
                                 Self.event("e1", title: "Concert")], detailed: false, logger: Self.logger)
            #expect(await kept.copy(experience: .ticketmaster, id: "e1", logger: Self.logger)?.item.title
                == "Concert, with the venue")
            #expect(await kept.copy(experience: .ticketmaster, id: "e2", logger: Self.logger)?.item.title == "Play")

            // A resolution's copy keeps its freshness and its record: a detail of another kind that carries the item
            // does not make it look newly resolved.
            try await kept.keep(Self.artwork("SK-C-5", title: "The Night Watch"), resolvedFrom: "ref-5")
            try await Self.age("SK-C-5", by: Self.recordLife + 60, pool)
            await kept.remember([Self.artwork("SK-C-5", title: "Night Watch")], detailed: true, logger: Self.logger)
            let copy = try #require(try await kept.copies(resolvedFrom: ["ref-5"], in: .rijksmuseum)["ref-5"])
            #expect(copy.item.title == "The Night Watch")
            #expect(!copy.isFresh)

            // What the upstream says is gone is forgotten, by id or by record.
            await kept.forget(experience: .ticketmaster, id: "e1", logger: Self.logger)
            #expect(await kept.copy(experience: .ticketmaster, id: "e1", logger: Self.logger) == nil)
            try await kept.forget(resolvedFrom: "ref-5", in: .rijksmuseum)
            #expect(await kept.copy(experience: .rijksmuseum, id: "SK-C-5", logger: Self.logger) == nil)
        }
    }

    /// The copies kept before the two tables were merged are served after it, each with its own life.
    @Test func theMergeKeepsEveryCopy() async throws {
        let before = Migrator(schema: "catalog", migrations: Array(CatalogMigrations.all.prefix(5)))
        try await withTestPool(migrators: [before], searchPath: "catalog") { pool, _ in
            let seen = String(decoding: try ServiceJSON.encoder.encode(Self.event("e1", title: "Concert")), as: UTF8.self)
            let resolved = String(decoding: try ServiceJSON.encoder.encode(Self.artwork("SK-C-5", title: "The Night Watch")),
                                  as: UTF8.self)
            try await pool.query("""
                INSERT INTO seen_items (experience, item_id, item, detailed, seen_at)
                VALUES ('ticketmaster', 'e1', \(seen)::jsonb, true, now() - interval '10 minutes')
                """)
            try await pool.query("""
                INSERT INTO resolved_items (experience, reference, item_id, item, resolved_at)
                VALUES ('rijksmuseum', 'ref-5', 'SK-C-5', \(resolved)::jsonb, now() - interval '2 days')
                """)
            _ = try await Migrator(schema: "catalog", migrations: CatalogMigrations.all).migrate(pool)

            let kept = KeptItems(pool: pool, staleIfError: Self.staleIfError, recordLife: 3 * Self.recordLife)
            let event = try #require(await kept.copy(experience: .ticketmaster, id: "e1", logger: Self.logger))
            #expect(event.item.title == "Concert")
            #expect((590...700).contains(event.age))
            let artwork = try #require(try await kept.copies(resolvedFrom: ["ref-5"], in: .rijksmuseum)["ref-5"])
            #expect(artwork.item.title == "The Night Watch")
            #expect(artwork.isFresh)
            let tables = try await pool.query("""
                SELECT count(*) FROM pg_tables WHERE schemaname = 'catalog'
                   AND tablename IN ('seen_items', 'resolved_items')
                """).values(Int.self)
            #expect(tables == [0])
        }
    }
}
