import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit

/// The last normalized copy of every item an upstream answered with, kept in PostgreSQL for every replica. It keeps
/// two promises:
///
/// - **An item seen opens during an outage.** When the upstream fails and no replica's cache holds the item's detail,
///   the detail route serves this copy (marked stale), so an item a user has seen in a list can still be opened and
///   favorited, whichever replica the request reaches. Such a copy lives `staleIfError`
///   (`CATALOG_STALE_IF_ERROR_SECONDS`, as for the in-process cache) after it was last seen.
/// - **An item resolved from an upstream's record is resolved once for all replicas** (a Rijksmuseum object with its
///   maker and image, found by the record it came from): fresh for `recordLife` (`CATALOG_RECORD_TTL_SECONDS`; the
///   museum's records change over days), so a warm search or detail costs no record call; then, while resolving it
///   again fails, still served as stale for `staleIfError`.
///
/// One copy per item. A detail's copy has more facts than a search result's, so a search result never replaces it (it
/// only marks the item as seen again); a detail replaces a seen copy, and neither touches a resolved one, which only a
/// resolution replaces (a second record resolving to the same object takes the copy over). An item the upstream says
/// no longer exists is forgotten.
struct KeptItems: Sendable {
    let pool: DatabasePool
    let staleIfError: TimeInterval
    let recordLife: TimeInterval
    private let prune = PruneSchedule()

    init(pool: DatabasePool, staleIfError: TimeInterval, recordLife: TimeInterval) {
        self.pool = pool
        self.staleIfError = staleIfError
        self.recordLife = recordLife
    }

    struct Copy: Sendable, Equatable {
        var item: CatalogItem
        /// Seconds since it was kept.
        var age: Int
        /// A resolved copy within `recordLife`: it stands for the upstream's record.
        var isFresh: Bool
    }

    // MARK: Seen in a list or a detail

    /// Keeps `items` as seen now. Never fails the request that fetched them: a database error is logged.
    func remember(_ items: [CatalogItem], detailed: Bool, logger: Logger) async {
        guard staleIfError > 0, !items.isEmpty else { return }  // a copy seen would never be served
        var seenIDs = Set<String>()
        // One row per item (a page listing an item twice would make the upsert touch its row twice, which fails), in
        // id order: replicas storing overlapping pages then lock their rows in the same order and cannot deadlock.
        let unique = items.filter { seenIDs.insert($0.id).inserted }.sorted { $0.id < $1.id }
        do {
            let json = String(decoding: try ServiceJSON.encoder.encode(unique), as: UTF8.self)
            try await pool.query("""
                INSERT INTO kept_items AS k (experience, item_id, item, detailed, kept_at)
                SELECT element->>'experience', element->>'id', element, \(detailed)::boolean, now()
                  FROM jsonb_array_elements(\(json)::jsonb) AS element
                ON CONFLICT (experience, item_id) DO UPDATE
                   SET item = CASE WHEN excluded.detailed OR NOT k.detailed THEN excluded.item ELSE k.item END,
                       detailed = k.detailed OR excluded.detailed, kept_at = excluded.kept_at
                 WHERE k.reference IS NULL
                """, prepare: true)
            try await pruneIfDue()
        } catch {
            logger.warning("could not keep the items an upstream sent", metadata: ["error": "\(error)"])
        }
    }

    /// Forgets an item the upstream says no longer exists, so that it is not served while the upstream fails.
    func forget(experience: ExperienceID, id: String, logger: Logger) async {
        do {
            try await pool.query(
                "DELETE FROM kept_items WHERE experience = \(experience.rawValue) AND item_id = \(id)", prepare: true)
        } catch {
            logger.warning("could not forget an item its upstream no longer has", metadata: ["error": "\(error)"])
        }
    }

    /// The item's copy while it lives; nil when there is none, or when the database cannot be asked (logged).
    func copy(experience: ExperienceID, id: String, logger: Logger) async -> Copy? {
        do {
            let rows = try await pool.query("""
                SELECT item::text AS item, extract(epoch FROM now() - kept_at)::float8 AS age,
                       reference IS NOT NULL AS resolved
                  FROM kept_items
                 WHERE experience = \(experience.rawValue) AND item_id = \(id) AND \(fragment: isAlive)
                """, prepare: true).rows
            guard let row = rows.first else { return nil }
            return try copy(try row.decode(String.self, column: "item"),
                            age: try row.decode(Double.self, column: "age"),
                            resolved: try row.decode(Bool.self, column: "resolved"))
        } catch {
            logger.warning("could not read the kept copy of an item", metadata: ["error": "\(error)"])
            return nil
        }
    }

    // MARK: Resolved from a record

    /// The live copies resolved from those of `references` that have one, by reference.
    func copies(resolvedFrom references: [String], in experience: ExperienceID) async throws -> [String: Copy] {
        guard !references.isEmpty else { return [:] }
        // A record that came to stand for another object leaves its first copy behind: the newest one counts.
        let rows = try await pool.query("""
            SELECT DISTINCT ON (reference) reference, item::text AS item,
                   extract(epoch FROM now() - kept_at)::float8 AS age
              FROM kept_items
             WHERE experience = \(experience.rawValue)
               AND reference IN (SELECT jsonb_array_elements_text(\(PostgresJSON(references))::jsonb))
               AND \(fragment: isAlive)
             ORDER BY reference, kept_at DESC
            """, prepare: true)
        var copies: [String: Copy] = [:]
        for row in rows.rows {
            copies[try row.decode(String.self, column: "reference")] = try copy(
                try row.decode(String.self, column: "item"), age: try row.decode(Double.self, column: "age"),
                resolved: true)
        }
        return copies
    }

    func keep(_ item: CatalogItem, resolvedFrom reference: String) async throws {
        try await pool.query("""
            INSERT INTO kept_items (experience, item_id, item, detailed, reference, kept_at)
            VALUES (\(item.experience.rawValue), \(item.id), \(PostgresJSON(item))::jsonb, true, \(reference), now())
            ON CONFLICT (experience, item_id) DO UPDATE
               SET item = excluded.item, detailed = true, reference = excluded.reference, kept_at = excluded.kept_at
            """, prepare: true)
        try await pruneIfDue()
    }

    /// Forgets what was resolved from a record the upstream no longer has.
    func forget(resolvedFrom reference: String, in experience: ExperienceID) async throws {
        try await pool.query("""
            DELETE FROM kept_items WHERE experience = \(experience.rawValue) AND reference = \(reference)
            """, prepare: true)
    }

    // MARK: Lifetimes

    /// A copy seen lives `staleIfError`; a resolved one `recordLife` longer.
    private var isAlive: SQL {
        "kept_at >= now() - \(fragment: lifetime)"
    }

    private var lifetime: SQL {
        """
        make_interval(secs => CASE WHEN reference IS NULL THEN 0 ELSE \(recordLife)::float8 END + \(staleIfError)::float8)
        """
    }

    private func copy(_ text: String, age: Double, resolved: Bool) throws -> Copy {
        let item = try ServiceJSON.decoder.decode(CatalogItem.self, from: Data(text.utf8))
        return Copy(item: item, age: Int(age), isFresh: resolved && age < recordLife)
    }

    /// Deletes the copies past their life, now and then (``PruneSchedule``).
    private func pruneIfDue() async throws {
        guard prune.isDue() else { return }
        // Two conditions on `kept_at` alone, so that the index finds the rows.
        try await pool.query("""
            DELETE FROM kept_items
             WHERE (reference IS NULL AND kept_at < now() - make_interval(secs => \(staleIfError)::float8))
                OR kept_at < now() - make_interval(secs => \(recordLife + staleIfError)::float8)
            """)
    }
}
