import Contracts
import EventStore
import Foundation
import Postgres

/// The favorites view and the user's event stream. Functions taking a connection run inside the caller's
/// transaction, after ``EventStore/lock(_:on:)``: a command's check and its append see the same state.
struct FavoritesStore: Sendable {
    let pool: DatabasePool

    /// One stream per user.
    static func stream(of user: UUID) -> String { "user-" + user.uuidString.lowercased() }

    static func find(user: UUID, experience: ExperienceID, itemId: String,
                     on connection: isolated PostgresConnection) throws -> Favorite? {
        try connection.query("""
            SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at FROM favorites
             WHERE user_id = \(user) AND experience = \(experience.rawValue) AND item_id = \(itemId)
            """, prepare: true).rows.first.map(favorite)
    }

    /// The favorite that event `id` added to `stream`, if that event is in the stream and added one: what a retried
    /// request answers with.
    static func favoriteAdded(by id: UUID, in stream: String, on connection: isolated PostgresConnection) throws
        -> Favorite?
    {
        guard let row = try connection.query("""
            SELECT event_type, schema_version, data::text, recorded_at FROM events
             WHERE event_id = \(id) AND stream_id = \(stream)
            """, prepare: true).rows.first
        else { return nil }
        let (type, schemaVersion, data, recordedAt) = try row.decode((String, Int, String, Date).self)
        guard case .added(let snapshot) = FavoriteEvent.decode(type: type, schemaVersion: schemaVersion,
                                                                data: Data(data.utf8))
        else { return nil }
        return Favorite(snapshot, favoritedAt: recordedAt)
    }

    static func count(user: UUID, experience: ExperienceID, on connection: isolated PostgresConnection) throws -> Int {
        try connection.query("""
            SELECT count(*) FROM favorites WHERE user_id = \(user) AND experience = \(experience.rawValue)
            """).single().decode(Int.self, at: 0)
    }

    /// The user whose stream `stream` is.
    static func user(ofStream stream: String) -> UUID? {
        stream.hasPrefix("user-") ? UUID(uuidString: String(stream.dropFirst(5))) : nil
    }

    /// Appends `event` to the user's stream and applies it to the view, in the caller's transaction. The event and
    /// the view carry the same time, `date`, so a rebuild from the log reproduces the view exactly.
    static func record(_ event: FavoriteEvent, id: UUID, user: UUID, in stream: LockedStream, metadata: EventMetadata,
                       at date: Date, on connection: isolated PostgresConnection) throws -> AppendResult {
        let stored: NewEvent = switch event {
        case .added(let snapshot):
            try NewEvent(id: id, type: event.type, data: snapshot, metadata: metadata, recordedAt: date)
        case .removed(let experience, let itemId):
            try NewEvent(id: id, type: event.type,
                         data: FavoriteEvent.Removed(experience: experience.rawValue, itemId: itemId), metadata: metadata,
                         recordedAt: date)
        case .cleared(let experience):
            try NewEvent(id: id, type: event.type, data: FavoriteEvent.Cleared(experience: experience.rawValue),
                         metadata: metadata, recordedAt: date)
        case .erased:
            preconditionFailure("only EventStore.erase writes the tombstone")
        }
        let result = try EventStore.append([stored], to: stream, expected: .any, on: connection)
        if !result.alreadyApplied {
            try apply(event, user: user, version: result.lastVersion, at: date, on: connection)
        }
        return result
    }

    /// The view's change for one event, in `table` (the live view, or a rebuild's copy).
    static func apply(_ event: FavoriteEvent, user: UUID, version: Int64, at date: Date,
                      table: String = FavoritesView.table, on connection: isolated PostgresConnection) throws {
        switch event {
        case .added(let item):
            try connection.query("""
                INSERT INTO \(identifier: table) (user_id, experience, item_id, title, subtitle, image_url, price,
                                                  rating, favorited_at, version)
                VALUES (\(user), \(item.experience), \(item.itemId), \(item.title), \(item.subtitle), \(item.imageURL),
                        \(item.price), \(item.rating), \(date), \(version))
                ON CONFLICT (user_id, experience, item_id) DO NOTHING
                """, prepare: true)
        case .removed(let experience, let itemId):
            try connection.query("""
                DELETE FROM \(identifier: table) WHERE user_id = \(user) AND experience = \(experience.rawValue)
                   AND item_id = \(itemId)
                """, prepare: true)
        case .cleared(let experience):
            try connection.query("""
                DELETE FROM \(identifier: table) WHERE user_id = \(user) AND experience = \(experience.rawValue)
                """)
        case .erased:
            try connection.query("DELETE FROM \(identifier: table) WHERE user_id = \(user)")
        }
    }

    /// Up to `limit` of the user's favorites of one experience after `cursor`, in its sort order, each with the
    /// version of the event that added it (for the next cursor). Keyset pagination: each page starts where the last
    /// one ended, whatever was added or removed in between.
    static func page(user: UUID, experience: ExperienceID, after cursor: FavoritePageCursor, limit: Int,
                     on connection: isolated PostgresConnection) throws -> [(favorite: Favorite, version: Int64)] {
        let exp = experience.rawValue
        let result = switch cursor.sort {
        case .recent:
            try connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp) AND version < \(cursor.version)
                 ORDER BY version DESC LIMIT \(limit)
                """, prepare: true)
        case .oldest:
            try connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp) AND version > \(cursor.version)
                 ORDER BY version LIMIT \(limit)
                """, prepare: true)
        case .title:
            try connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp)
                   AND (lower(title), item_id) > (lower(\(cursor.title)), \(cursor.itemId))
                 ORDER BY lower(title), item_id LIMIT \(limit)
                """, prepare: true)
        case .price:
            // Priced items first (by price, then id), then the unpriced ones (by id).
            try connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp)
                   AND CASE WHEN \(cursor.price)::float8 IS NULL THEN price IS NULL AND item_id > \(cursor.itemId)
                            ELSE price > \(cursor.price)::float8 OR price IS NULL
                                 OR (price = \(cursor.price)::float8 AND item_id > \(cursor.itemId)) END
                 ORDER BY price NULLS LAST, item_id LIMIT \(limit)
                """, prepare: true)
        }
        return try result.rows.map { row in (try favorite(row), try row.decode(Int64.self, at: 8)) }
    }

    static func ids(user: UUID, experience: ExperienceID, on connection: isolated PostgresConnection) throws
        -> [String]
    {
        try connection.query("""
            SELECT item_id FROM favorites WHERE user_id = \(user) AND experience = \(experience.rawValue)
             ORDER BY item_id
            """, prepare: true).decode(as: String.self)
    }

    /// The user's stream version (what `ETag`s follow) and, unless `isCurrent` says the client already holds that
    /// version, what `read` returns: one lease, so one trip to the session's thread.
    func versioned<Value: Sendable>(
        user: UUID,
        unless isCurrent: @escaping @Sendable (Int64) -> Bool,
        read: @escaping @Sendable (isolated PostgresConnection) throws -> Value
    ) async throws -> (version: Int64, value: Value?) {
        let stream = Self.stream(of: user)
        return try await pool.withSession { connection in
            let version = try EventStore.version(of: stream, on: connection)
            return (version, isCurrent(version) ? nil : try read(connection))
        }
    }

    static func favorite(_ row: PostgresRow) throws -> Favorite {
        let (experience, itemId, title, subtitle, imageURL, price, rating, at) =
            try row.decode((String, String, String, String?, String?, Double?, Double?, Date).self)
        return Favorite(experience: ExperienceID(rawValue: experience), itemId: itemId, title: title, subtitle: subtitle,
                        imageURL: imageURL, price: price, rating: rating, favoritedAt: at)
    }
}
