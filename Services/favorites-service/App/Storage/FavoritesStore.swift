import Contracts
import EventStore
import Foundation
import Postgres

/// The favorites view and the user's event stream. Functions taking a connection run inside the caller's
/// transaction, after ``EventStore/lock(_:checking:reading:on:)``: a command's check and its append see the same
/// state. A command reads with the lock (one round trip) and writes with its commit (a second one), so its reads are
/// given here as queries, and their results decoded separately.
struct FavoritesStore: Sendable {
    let pool: DatabasePool

    /// One stream per user.
    static func stream(of user: UUID) -> String { "user-" + user.uuidString.lowercased() }

    /// The user's favorite `itemId`, if it is one (decode with ``favorite(in:)``).
    static func findQuery(user: UUID, experience: ExperienceID, itemId: String) -> SQL {
        """
        SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date, local_time
          FROM favorites
         WHERE user_id = \(user) AND experience = \(experience.rawValue) AND item_id = \(itemId)
        """
    }

    static func favorite(in result: QueryResult) throws -> Favorite? {
        try result.rows.first.map(favorite)
    }

    /// Event `id` of `stream` (decode with ``originalAnswer(in:)``).
    static func eventQuery(_ id: UUID, in stream: String) -> SQL {
        """
        SELECT event_type, schema_version, data::text, recorded_at FROM events
         WHERE event_id = \(id) AND stream_id = \(stream)
        """
    }

    /// What a favorite answered, from its event read by ``eventQuery(_:in:)``, if the event is in the stream: the
    /// favorite it added (`created`), or the one it found there already. What a retried request answers with.
    static func originalAnswer(in result: QueryResult) throws -> (favorite: Favorite, created: Bool)? {
        guard let row = result.rows.first else { return nil }
        let (type, schemaVersion, data, recordedAt) = try row.decode((String, Int, String, Date).self)
        switch FavoriteEvent.decode(type: type, schemaVersion: schemaVersion, data: Data(data.utf8)) {
        case .added(let snapshot): return (Favorite(snapshot, favoritedAt: recordedAt), true)
        case .confirmed(let snapshot, let favoritedAt): return (Favorite(snapshot, favoritedAt: favoritedAt), false)
        default: return nil
        }
    }

    /// How many favorites the user has in one experience (decode with `single().decode(Int.self, at: 0)`).
    static func countQuery(user: UUID, experience: ExperienceID) -> SQL {
        "SELECT count(*) FROM favorites WHERE user_id = \(user) AND experience = \(experience.rawValue)"
    }

    /// The user whose stream `stream` is.
    static func user(ofStream stream: String) -> UUID? {
        stream.hasPrefix("user-") ? UUID(uuidString: String(stream.dropFirst(5))) : nil
    }

    /// Appends `event` to the user's stream and applies it to the view, then commits: the last step of the caller's
    /// transaction body, which returns right after (see ``PostgresConnection/commit(with:prepare:)``). The event and
    /// the view carry the same time, `date`, so a rebuild from the log reproduces the view exactly. When the event is
    /// already in the stream (a retry) nothing is written, and the caller's transaction ends as usual.
    @discardableResult
    static func record(_ event: FavoriteEvent, id: UUID, user: UUID, in stream: LockedStream, metadata: EventMetadata,
                       at date: Date, on connection: isolated PostgresConnection) async throws -> AppendResult {
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
        case .confirmed(let snapshot, let favoritedAt):
            try NewEvent(id: id, type: event.type,
                         data: FavoriteEvent.Confirmed(favorite: snapshot, favoritedAt: favoritedAt.timeIntervalSince1970),
                         metadata: metadata, recordedAt: date)
        case .erased:
            preconditionFailure("only EventStore.erase writes the tombstone")
        }
        return try await EventStore.append([stored], to: stream, expected: .any, with: { result in
            [viewChange(for: event, user: user, version: result.lastVersion, at: date)].compactMap { $0 }
        }, committing: true, on: connection)
    }

    /// The view's change for one event, in `table` (the live view, or a rebuild's copy).
    static func apply(_ event: FavoriteEvent, user: UUID, version: Int64, at date: Date,
                      table: String = FavoritesView.table, on connection: isolated PostgresConnection) async throws {
        guard let change = viewChange(for: event, user: user, version: version, at: date, table: table) else { return }
        try await connection.query(change, prepare: true)
    }

    /// The statement that applies `event` to the view; nil for an event that changes nothing (`confirmed`).
    static func viewChange(for event: FavoriteEvent, user: UUID, version: Int64, at date: Date,
                           table: String = FavoritesView.table) -> SQL? {
        switch event {
        case .added(let item):
            """
            INSERT INTO \(identifier: table) (user_id, experience, item_id, title, subtitle, image_url, price,
                                              rating, local_date, local_time, favorited_at, version)
            VALUES (\(user), \(item.experience), \(item.itemId), \(item.title), \(item.subtitle), \(item.imageURL),
                    \(item.price), \(item.rating), \(item.localDate), \(item.localTime), \(date), \(version))
            ON CONFLICT (user_id, experience, item_id) DO NOTHING
            """
        case .removed(let experience, let itemId):
            """
            DELETE FROM \(identifier: table) WHERE user_id = \(user) AND experience = \(experience.rawValue)
               AND item_id = \(itemId)
            """
        case .cleared(let experience):
            "DELETE FROM \(identifier: table) WHERE user_id = \(user) AND experience = \(experience.rawValue)"
        case .erased:
            "DELETE FROM \(identifier: table) WHERE user_id = \(user)"
        case .confirmed:
            nil
        }
    }

    /// Up to `limit` of the user's favorites of one experience after `cursor`, in its sort order, each with the
    /// version of the event that added it (for the next cursor). Keyset pagination: each page starts where the last
    /// one ended, whatever was added or removed in between.
    static func page(user: UUID, experience: ExperienceID, after cursor: FavoritePageCursor, limit: Int,
                     on connection: isolated PostgresConnection) async throws -> [(favorite: Favorite, version: Int64)] {
        let exp = experience.rawValue
        let result = switch cursor.sort {
        case .recent:
            try await connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date,
                       local_time, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp) AND version < \(cursor.version)
                 ORDER BY version DESC LIMIT \(limit)
                """, prepare: true)
        case .oldest:
            try await connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date,
                       local_time, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp) AND version > \(cursor.version)
                 ORDER BY version LIMIT \(limit)
                """, prepare: true)
        case .title:
            try await connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date,
                       local_time, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp)
                   AND (lower(title), item_id) > (lower(\(cursor.title)), \(cursor.itemId))
                 ORDER BY lower(title), item_id LIMIT \(limit)
                """, prepare: true)
        case .price:
            // Priced items first (by price, then id), then the unpriced ones (by id).
            try await connection.query("""
                SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date,
                       local_time, version
                  FROM favorites WHERE user_id = \(user) AND experience = \(exp)
                   AND CASE WHEN \(cursor.price)::float8 IS NULL THEN price IS NULL AND item_id > \(cursor.itemId)
                            ELSE price > \(cursor.price)::float8 OR price IS NULL
                                 OR (price = \(cursor.price)::float8 AND item_id > \(cursor.itemId)) END
                 ORDER BY price NULLS LAST, item_id LIMIT \(limit)
                """, prepare: true)
        }
        return try result.rows.map { row in (try favorite(row), try row.decode(Int64.self, at: 10)) }
    }

    static func ids(user: UUID, experience: ExperienceID, on connection: isolated PostgresConnection) async throws
        -> [String]
    {
        try await connection.query("""
            SELECT item_id FROM favorites WHERE user_id = \(user) AND experience = \(experience.rawValue)
             ORDER BY item_id
            """, prepare: true).decode(as: String.self)
    }

    /// The user's stream version (what `ETag`s follow) and, unless `isCurrent` says the client already holds that
    /// version, what `read` returns: one lease, so one trip to the session's thread.
    func versioned<Value: Sendable>(
        user: UUID,
        unless isCurrent: @escaping @Sendable (Int64) -> Bool,
        read: @escaping @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> (version: Int64, value: Value?) {
        let stream = Self.stream(of: user)
        return try await pool.withSession { connection in
            let version = try await EventStore.version(of: stream, on: connection)
            return await (version, isCurrent(version) ? nil : try read(connection))
        }
    }

    static func favorite(_ row: PostgresRow) throws -> Favorite {
        let (experience, itemId, title, subtitle, imageURL, price, rating, at, localDate, localTime) =
            try row.decode((String, String, String, String?, String?, Double?, Double?, Date, String?, String?).self)
        return Favorite(experience: ExperienceID(rawValue: experience), itemId: itemId, title: title, subtitle: subtitle,
                        imageURL: imageURL, price: price, rating: rating, localDate: localDate, localTime: localTime,
                        favoritedAt: at)
    }
}
