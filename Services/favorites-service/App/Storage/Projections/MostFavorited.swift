import Contracts
import EventStore
import Foundation
import Postgres

/// "Most favorited items per experience": an async projection across every user's stream.
///
/// It keeps its own record of who favorites what (`popular_members`), because a clear or an erasure names no items:
/// the counts drop by exactly the items that user had. A batch of events is applied set-wise, in a few statements
/// (``ViewBatch/popular(_:items:members:)``); an item shows the title of its latest add.
struct MostFavorited: Projection {
    static let items = "popular_items"
    static let members = "popular_members"
    let name = "popular"
    let tables = [Self.items, Self.members]

    func statements(for events: [RecordedEvent], in tables: ProjectionTables) throws -> [SQL] {
        try ViewBatch.popular(try ViewBatch.effect(of: events, items: false), items: tables[Self.items],
                              members: tables[Self.members])
    }

    /// The most favorited items of `experience`, most first.
    static func top(experience: ExperienceID, limit: Int, pool: DatabasePool) async throws -> [PopularItem] {
        try await pool.query("""
            SELECT item_id, title, subtitle, image_url, favorite_count FROM popular_items
             WHERE experience = \(experience.rawValue) AND favorite_count > 0
             ORDER BY favorite_count DESC, item_id LIMIT \(limit)
            """, prepare: true).rows.map { row in
            PopularItem(itemId: try row.decode(String.self, column: "item_id"),
                        title: try row.decode(String.self, column: "title"),
                        subtitle: try row.decode(String?.self, column: "subtitle"),
                        imageURL: try row.decode(String?.self, column: "image_url").map(SizedImage.cell),
                        favoriteCount: try row.decode(Int.self, column: "favorite_count"))
        }
    }
}
