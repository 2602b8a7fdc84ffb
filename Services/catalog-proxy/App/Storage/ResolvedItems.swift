import Contracts
import Foundation
import Postgres
import ServiceKit

/// Items resolved from an upstream's records (a Rijksmuseum object with its maker and image), kept in PostgreSQL for
/// every replica, so that a search whose objects are known costs one upstream call, and a detail none.
///
/// The museum's records change over days, not minutes: a copy is served as fresh for `freshFor`
/// (`CATALOG_RECORD_TTL_SECONDS`), then resolved again when asked for; while that fails it is still served, as stale,
/// for as long as `CATALOG_STALE_IF_ERROR_SECONDS` allows, after which it is deleted.
struct ResolvedItems: Sendable {
    let pool: DatabasePool
    let freshFor: TimeInterval
    let keptFor: TimeInterval
    private let prune = PruneSchedule()

    init(pool: DatabasePool, freshFor: TimeInterval, staleIfError: TimeInterval) {
        self.pool = pool
        self.freshFor = freshFor
        keptFor = freshFor + staleIfError
    }

    struct Copy: Sendable, Equatable {
        var item: CatalogItem
        /// Seconds since it was resolved.
        var age: Int
        var isFresh: Bool
    }

    /// The kept copies of those of `references` that have one, by reference.
    func copies(of references: [String], in experience: ExperienceID) async throws -> [String: Copy] {
        guard !references.isEmpty else { return [:] }
        let rows = try await pool.query("""
            SELECT reference, item::text, extract(epoch FROM now() - resolved_at)::float8 FROM resolved_items
             WHERE experience = \(experience.rawValue)
               AND reference IN (SELECT jsonb_array_elements_text(\(PostgresJSON(references))::jsonb))
               AND resolved_at > now() - make_interval(secs => \(keptFor))
            """, prepare: true)
        var copies: [String: Copy] = [:]
        for row in rows.rows {
            let (reference, text, age) = try row.decode((String, String, Double).self)
            copies[reference] = try copy(text, age: age)
        }
        return copies
    }

    /// The kept copy of the item with this id (an object number), with the reference it was resolved from.
    func copy(ofItem id: String, in experience: ExperienceID) async throws -> (reference: String, copy: Copy)? {
        let rows = try await pool.query("""
            SELECT reference, item::text, extract(epoch FROM now() - resolved_at)::float8 FROM resolved_items
             WHERE experience = \(experience.rawValue) AND item_id = \(id)
               AND resolved_at > now() - make_interval(secs => \(keptFor))
             ORDER BY resolved_at DESC LIMIT 1
            """, prepare: true)
        guard let row = rows.rows.first else { return nil }
        let (reference, text, age) = try row.decode((String, String, Double).self)
        return (reference, try copy(text, age: age))
    }

    func store(_ item: CatalogItem, resolvedFrom reference: String) async throws {
        try await pool.query("""
            INSERT INTO resolved_items (experience, reference, item_id, item, resolved_at)
            VALUES (\(item.experience.rawValue), \(reference), \(item.id), \(PostgresJSON(item))::jsonb, now())
            ON CONFLICT (experience, reference) DO UPDATE
               SET item_id = excluded.item_id, item = excluded.item, resolved_at = excluded.resolved_at
            """, prepare: true)
        if prune.isDue() {
            try await pool.query("""
                DELETE FROM resolved_items WHERE resolved_at < now() - make_interval(secs => \(keptFor))
                """)
        }
    }

    /// Forgets a record the upstream no longer has.
    func forget(_ reference: String, in experience: ExperienceID) async throws {
        try await pool.query("""
            DELETE FROM resolved_items WHERE experience = \(experience.rawValue) AND reference = \(reference)
            """, prepare: true)
    }

    private func copy(_ text: String, age: Double) throws -> Copy {
        let item = try ServiceJSON.decoder.decode(CatalogItem.self, from: Data(text.utf8))
        return Copy(item: item, age: Int(age), isFresh: age < freshFor)
    }
}
