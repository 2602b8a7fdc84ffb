import Contracts
import Foundation
import Postgres
import ServiceKit

/// The datasets the proxy serves itself (``DatasetSource``), one per experience, in PostgreSQL: each item as served
/// in a detail, with what lists are searched and sorted by.
struct DatasetStore: Sendable {
    let pool: DatabasePool

    /// Replaces the experience's dataset with `items`, in their order, in one transaction: replicas read the old
    /// dataset or the new, never a mix, and loading the same items again changes nothing but the load's time.
    func replace(_ experience: ExperienceID, with items: [CatalogItem], origin: String,
                 searchableText: @Sendable (CatalogItem) -> String) async throws {
        struct Row: Codable, Sendable {
            var id: String
            var item: CatalogItem
            var text: String
            var price: Double?
            var rating: Double?
        }
        var seen = Set<String>()
        let rows = items.filter { seen.insert($0.id).inserted }.map {
            Row(id: $0.id, item: $0, text: UserText.normalized(searchableText($0)).lowercased(), price: $0.phone?.price,
                rating: $0.phone?.rating)
        }
        let json = String(decoding: try ServiceJSON.encoder.encode(rows), as: UTF8.self)
        let experience = experience.rawValue
        try await pool.withTransaction { connection in
            // Two loads at once (two replicas refreshing, a command beside them) take turns.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext('dataset|' || \(experience)))")
            try await connection.query("DELETE FROM dataset_items WHERE experience = \(experience)")
            try await connection.query("""
                INSERT INTO dataset_items (experience, item_id, position, item, search_text, price, rating)
                SELECT \(experience), row->>'id', position, row->'item', row->>'text', (row->>'price')::float8,
                       (row->>'rating')::float8
                  FROM jsonb_array_elements(\(json)::jsonb) WITH ORDINALITY AS rows(row, position)
                """)
            try await connection.query("""
                INSERT INTO dataset_loads (experience, origin, item_count, loaded_at)
                VALUES (\(experience), \(origin), \(rows.count), now())
                ON CONFLICT (experience) DO UPDATE
                   SET origin = excluded.origin, item_count = excluded.item_count, loaded_at = excluded.loaded_at
                """)
        }
    }

    /// One page of the dataset: items whose text contains `text` (all when empty), in `sort`'s order (the dataset's
    /// own for orders it has no column for), and whether more follow.
    func page(_ experience: ExperienceID, containing text: String, sortedBy sort: ListSort, offset: Int,
              limit: Int) async throws -> (items: [CatalogItem], hasMore: Bool) {
        let pattern = "%" + Self.escapedForLike(text.lowercased()) + "%"
        let order: StaticString
        switch sort {
        case .priceAscending: order = "price ASC NULLS LAST, position"
        case .priceDescending: order = "price DESC NULLS LAST, position"
        case .ratingDescending: order = "rating DESC NULLS LAST, position"
        default: order = "position"
        }
        let rows = try await pool.query("""
            SELECT item::text FROM dataset_items
             WHERE experience = \(experience.rawValue) AND search_text LIKE \(pattern) ESCAPE '\\'
             ORDER BY \(raw: order) LIMIT \(limit + 1) OFFSET \(offset)
            """)
        let items = try rows.values(String.self).map(Self.item)
        return (Array(items.prefix(limit)), items.count > limit)
    }

    func item(_ experience: ExperienceID, id: String) async throws -> CatalogItem? {
        try await pool.query("""
            SELECT item::text FROM dataset_items WHERE experience = \(experience.rawValue) AND item_id = \(id)
            """, prepare: true).values(String.self).first.map(Self.item)
    }

    /// When the dataset was last loaded, and from where; nil before its first load.
    func lastLoad(_ experience: ExperienceID) async throws -> (origin: String, at: Date)? {
        try await pool.query("""
            SELECT origin, loaded_at FROM dataset_loads WHERE experience = \(experience.rawValue)
            """, prepare: true).rows.first.map { row in
            (origin: try row.decode(String.self, column: "origin"), at: try row.decode(Date.self, column: "loaded_at"))
        }
    }

    static func item(_ text: String) throws -> CatalogItem {
        try ServiceJSON.decoder.decode(CatalogItem.self, from: Data(text.utf8))
    }

    /// `%`, `_` and the escape character itself match only themselves.
    static func escapedForLike(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
    }
}
