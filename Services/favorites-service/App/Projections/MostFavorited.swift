import Contracts
import EventStore
import Foundation
import Postgres

/// "Most favorited items per experience": an async projection across every user's stream.
///
/// It keeps its own record of who favorites what (`popular_members`), because a clear or an erasure names no items:
/// the counts drop by exactly the items that user had. Applying an event twice is harmless for the same reason, though
/// the runner's checkpoint already sees to it that each is applied once.
struct MostFavorited: Projection {
    static let items = "popular_items"
    static let members = "popular_members"
    let name = "popular"
    let tables = [Self.items, Self.members]

    func apply(_ events: [RecordedEvent], to tables: ProjectionTables, on connection: isolated PostgresConnection)
        async throws
    {
        let items = tables[Self.items]
        let members = tables[Self.members]
        for event in events {
            guard let user = FavoritesStore.user(ofStream: event.streamID), let favorite = try FavoriteEvent(event)
            else { continue }
            switch favorite {
            case .added(let item):
                try await connection.query("""
                    WITH joined AS (
                        INSERT INTO \(identifier: members) (user_id, experience, item_id)
                        VALUES (\(user), \(item.experience), \(item.itemId))
                        ON CONFLICT DO NOTHING RETURNING experience, item_id)
                    INSERT INTO \(identifier: items) AS counted
                           (experience, item_id, title, subtitle, image_url, favorite_count)
                    SELECT experience, item_id, \(item.title), \(item.subtitle), \(item.imageURL), 1 FROM joined
                    ON CONFLICT (experience, item_id) DO UPDATE
                       SET favorite_count = counted.favorite_count + 1, title = excluded.title,
                           subtitle = excluded.subtitle, image_url = excluded.image_url
                    """, prepare: true)
            case .removed(let experience, let itemId):
                try await leave(user: user, experience: experience.rawValue, itemId: itemId, items: items, members: members,
                          on: connection)
            case .cleared(let experience):
                try await leave(user: user, experience: experience.rawValue, itemId: nil, items: items, members: members,
                          on: connection)
            case .erased:
                try await leave(user: user, experience: nil, itemId: nil, items: items, members: members, on: connection)
            case .confirmed:
                continue  // changes no count
            case .cardWritten:
                continue  // a card the user wrote is theirs alone: never among everyone's most favorited
            }
        }
        // Items nobody favorites any more (a partial index finds them).
        try await connection.query("DELETE FROM \(identifier: items) WHERE favorite_count = 0", prepare: true)
    }

    /// Drops the user's membership of the matching items (`nil`: any) and counts each of them one less.
    private func leave(user: UUID, experience: String?, itemId: String?, items: String, members: String,
                       on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            WITH gone AS (
                DELETE FROM \(identifier: members)
                 WHERE user_id = \(user) AND (\(experience)::text IS NULL OR experience = \(experience))
                   AND (\(itemId)::text IS NULL OR item_id = \(itemId))
                RETURNING experience, item_id)
            UPDATE \(identifier: items) AS counted SET favorite_count = counted.favorite_count - 1
              FROM gone WHERE counted.experience = gone.experience AND counted.item_id = gone.item_id
            """, prepare: true)
    }

    /// The most favorited items of `experience`, most first.
    static func top(experience: ExperienceID, limit: Int, pool: DatabasePool) async throws -> [PopularItem] {
        try await pool.query("""
            SELECT item_id, title, subtitle, image_url, favorite_count FROM popular_items
             WHERE experience = \(experience.rawValue) AND favorite_count > 0
             ORDER BY favorite_count DESC, item_id LIMIT \(limit)
            """, prepare: true).decode((String, String, String?, String?, Int).self)
            .map { PopularItem(itemId: $0.0, title: $0.1, subtitle: $0.2, imageURL: $0.3, favoriteCount: $0.4) }
    }
}
