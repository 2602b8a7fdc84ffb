import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit

/// The last normalized copy of every item an upstream answered with, in search results or as a detail, kept in
/// PostgreSQL for all replicas: when the upstream fails and no replica's cache holds the item's detail, the detail
/// route falls back to it (marked stale). So an item a user has seen in a list can still be opened and favorited
/// while its catalog is down, whichever replica the request reaches.
///
/// A detail's copy has more facts than a search result's, so a search result never replaces it (it only marks the
/// item as seen again); a detail replaces either. An item the upstream says no longer exists is forgotten. Items not
/// seen for `window` (`CATALOG_STALE_IF_ERROR_SECONDS`, as for the in-process cache) are neither served nor kept.
struct SeenItems: Sendable {
    let pool: DatabasePool
    let window: TimeInterval
    private let prune = PruneSchedule()

    init(pool: DatabasePool, window: TimeInterval) {
        self.pool = pool
        self.window = window
    }

    /// Stores `items` as seen now. Never fails the request that fetched them: a database error is logged.
    func remember(_ items: [CatalogItem], detailed: Bool, logger: Logger) async {
        guard window > 0, !items.isEmpty else { return }
        var seenIDs = Set<String>()
        // One row per item (a page listing an item twice would make the upsert touch its row twice, which fails), in
        // id order: replicas storing overlapping pages then lock their rows in the same order and cannot deadlock.
        let unique = items.filter { seenIDs.insert($0.id).inserted }.sorted { $0.id < $1.id }
        do {
            let json = String(decoding: try ServiceJSON.encoder.encode(unique), as: UTF8.self)
            try await pool.query("""
                INSERT INTO seen_items AS s (experience, item_id, item, detailed, seen_at)
                SELECT element->>'experience', element->>'id', element, \(detailed)::boolean, now()
                  FROM jsonb_array_elements(\(json)::jsonb) AS element
                ON CONFLICT (experience, item_id) DO UPDATE
                   SET item = CASE WHEN excluded.detailed OR NOT s.detailed THEN excluded.item ELSE s.item END,
                       detailed = s.detailed OR excluded.detailed, seen_at = excluded.seen_at
                """, prepare: true)
            try await pruneIfDue()
        } catch {
            logger.warning("could not remember the items an upstream sent", metadata: ["error": "\(error)"])
        }
    }

    /// Forgets an item the upstream says no longer exists, so that it is not served while the upstream fails.
    func forget(experience: ExperienceID, id: String, logger: Logger) async {
        guard window > 0 else { return }
        do {
            try await pool.query(
                "DELETE FROM seen_items WHERE experience = \(experience.rawValue) AND item_id = \(id)", prepare: true)
        } catch {
            logger.warning("could not forget an item its upstream no longer has", metadata: ["error": "\(error)"])
        }
    }

    /// The last copy of an item seen within the window, as the body the detail route serves, and the seconds since the
    /// item was last seen; nil when there is none, or when the database cannot be asked (logged).
    func lastCopy(experience: ExperienceID, id: String, logger: Logger) async -> (body: CachedBody, age: Int)? {
        // Re-encoded: jsonb keeps its own spacing and key order, and the route serves the service's encoding.
        guard let (item, age) = await read(experience: experience, id: id, logger: logger),
              let body = try? ServiceJSON.encoder.encode(item)
        else { return nil }
        return (CachedBody(body: body), age)
    }

    /// The last copy of an item seen within the window, for a detail that builds on it.
    func lastItem(experience: ExperienceID, id: String, logger: Logger) async -> CatalogItem? {
        await read(experience: experience, id: id, logger: logger)?.item
    }

    private func read(experience: ExperienceID, id: String, logger: Logger) async -> (item: CatalogItem, age: Int)? {
        guard window > 0 else { return nil }
        do {
            let rows = try await pool.query("""
                SELECT item::text, extract(epoch FROM now() - seen_at)::float8 FROM seen_items
                 WHERE experience = \(experience.rawValue) AND item_id = \(id)
                   AND seen_at > now() - make_interval(secs => \(window))
                """, prepare: true).rows
            guard let row = rows.first else { return nil }
            let (text, age) = try row.decode((String, Double).self)
            return (try ServiceJSON.decoder.decode(CatalogItem.self, from: Data(text.utf8)), Int(age))
        } catch {
            logger.warning("could not read the last copy of an item", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Deletes the copies past the window, now and then (``PruneSchedule``).
    private func pruneIfDue() async throws {
        guard prune.isDue() else { return }
        try await pool.query("DELETE FROM seen_items WHERE seen_at < now() - make_interval(secs => \(window))")
    }
}
