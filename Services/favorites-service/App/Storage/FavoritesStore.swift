import Contracts
import EventStore
import Foundation
import Postgres

/// The favorites view and the user's event stream, in SQL. A write runs in one transaction (see
/// ``FavoritesWriter``): ``lock(user:checking:reading:on:)`` locks the user's stream and reads what the command
/// decides on in one round trip, as a typed ``StreamState``; ``record(_:id:user:in:metadata:at:on:)`` appends the
/// event, updates the view and commits in a second one.
struct FavoritesStore: Sendable {
    let pool: DatabasePool

    /// One stream per user.
    static func stream(of user: UUID) -> String { "user-" + user.uuidString.lowercased() }

    /// The user whose stream `stream` is.
    static func user(ofStream stream: String) -> UUID? {
        stream.hasPrefix("user-") ? UUID(uuidString: String(stream.dropFirst(5))) : nil
    }

    /// The columns ``favorite(_:)`` reads, in its order.
    static let columns: StaticString = """
        experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date, local_time, rank,
        facts::text, written, item::text
        """

    // MARK: Writes

    /// What a command reads of the user's favorites under the stream's lock.
    struct Reads: Sendable {
        var experience: ExperienceID
        /// This item's row, if it is a favorite.
        var item: String?
        /// How many favorites the user keeps in the experience.
        var count = false
        /// The favorite whose title equals this one without case or surrounding spaces, in either Unicode form.
        var title: String?
        /// The answer the request's event gave, if it is in the stream (a retry).
        var originalAnswer = false
    }

    /// The user's favorites as a command sees them, its stream locked.
    struct StreamState: Sendable {
        var stream: LockedStream
        /// The request's event is in the stream already: this is a retry.
        var isRetry: Bool
        var originalAnswer: (favorite: Favorite, created: Bool)?
        var item: Favorite?
        var count: Int
        var titleHolder: Favorite?
    }

    /// Locks the user's stream (see ``EventStore/lock(_:checking:reading:on:)``) and reads `reads`, in one round trip.
    static func lock(user: UUID, checking eventID: UUID, reading reads: Reads,
                     on connection: isolated PostgresConnection) async throws -> StreamState {
        let stream = stream(of: user)
        let experience = reads.experience.rawValue
        var queries: [SQL] = []
        if let item = reads.item {
            queries.append("""
                SELECT \(raw: columns) FROM favorites
                 WHERE user_id = \(user) AND experience = \(experience) AND item_id = \(item)
                """)
        }
        if reads.count {
            queries.append("SELECT count(*) FROM favorites WHERE user_id = \(user) AND experience = \(experience)")
        }
        if let title = reads.title {
            queries.append("""
                SELECT \(raw: columns) FROM favorites
                 WHERE user_id = \(user) AND experience = \(experience)
                   AND lower(normalize(btrim(title), NFC)) = lower(normalize(btrim(\(title)), NFC))
                 LIMIT 1
                """)
        }
        if reads.originalAnswer { queries.append(eventQuery(eventID, in: stream)) }
        let (locked, results) = try await EventStore.lock(stream, checking: [eventID], reading: queries,
                                                          on: connection)
        var next = results[...]
        let item = try reads.item.flatMap { _ in try next.popFirst()?.rows.first.map(favorite) }
        let count = try reads.count ? next.popFirst()?.single().decode(Int.self, at: 0) ?? 0 : 0
        let holder = try reads.title.flatMap { _ in try next.popFirst()?.rows.first.map(favorite) }
        let original = try reads.originalAnswer ? next.popFirst().flatMap(originalAnswer) : nil
        return StreamState(stream: locked, isRetry: locked.contains(event: eventID) == true, originalAnswer: original,
                           item: item, count: count, titleHolder: holder)
    }

    /// Event `id` of `stream`, as ``originalAnswer(in:)`` reads it.
    static func eventQuery(_ id: UUID, in stream: String) -> SQL {
        """
        SELECT event_type, schema_version, data::text, recorded_at FROM events
         WHERE event_id = \(id) AND stream_id = \(stream)
        """
    }

    /// What a write that added an item answered, if its event is in the user's stream: the favorite it added
    /// (`created`), or the one it found there already. A retried request answers with it, before asking anyone.
    func originalAnswer(of id: UUID, user: UUID) async throws -> (favorite: Favorite, created: Bool)? {
        try Self.originalAnswer(in: try await pool.query(Self.eventQuery(id, in: Self.stream(of: user)), prepare: true))
    }

    static func originalAnswer(in result: QueryResult) throws -> (favorite: Favorite, created: Bool)? {
        guard let row = result.rows.first else { return nil }
        let (type, schemaVersion, data, recordedAt) = try row.decode((String, Int, String, Date).self)
        switch FavoriteEvent.decode(type: type, schemaVersion: schemaVersion, data: Data(data.utf8)) {
        case .added(let snapshot), .cardWritten(let snapshot): return (Favorite(snapshot, favoritedAt: recordedAt), true)
        case .confirmed(let snapshot, let favoritedAt): return (Favorite(snapshot, favoritedAt: favoritedAt), false)
        default: return nil
        }
    }

    /// Appends `event` to the user's stream and applies it to the view, then commits: the last step of the caller's
    /// transaction body, which returns right after (see ``PostgresConnection/commit(with:prepare:)``). The event and
    /// the view carry the same time, `date`, so a rebuild from the log reproduces the view exactly. When the event is
    /// already in the stream (a retry) nothing is written, and the caller's transaction ends as usual.
    @discardableResult
    static func record(_ event: FavoriteEvent, id: UUID, user: UUID, in stream: LockedStream, metadata: EventMetadata,
                       at date: Date, on connection: isolated PostgresConnection) async throws -> AppendResult {
        let stored: NewEvent = switch event {
        case .added(let snapshot), .cardWritten(let snapshot):
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

    /// The statement that applies `event` to the view inline; nil for an event that changes nothing (`confirmed`).
    static func viewChange(for event: FavoriteEvent, user: UUID, version: Int64, at date: Date,
                           table: String = FavoritesView.table) -> SQL? {
        switch event {
        case .added(let item), .cardWritten(let item):
            let facts = item.facts.map { PostgresJSON($0) }
            let cell = item.item.map { PostgresJSON($0) }
            return """
                INSERT INTO \(identifier: table) (user_id, experience, item_id, title, subtitle, image_url, price,
                                                  rating, local_date, local_time, rank, facts, written, favorited_at,
                                                  version, item)
                VALUES (\(user), \(item.experience), \(item.itemId), \(item.title), \(item.subtitle), \(item.imageURL),
                        \(item.price), \(item.rating), \(item.localDate), \(item.localTime), \(item.rank),
                        \(facts)::jsonb, \(item.written == true), \(date), \(version), \(cell)::jsonb)
                ON CONFLICT (user_id, experience, item_id) DO NOTHING
                """
        case .removed(let experience, let itemId):
            return """
                DELETE FROM \(identifier: table) WHERE user_id = \(user) AND experience = \(experience.rawValue)
                   AND item_id = \(itemId)
                """
        case .cleared(let experience):
            return "DELETE FROM \(identifier: table) WHERE user_id = \(user) AND experience = \(experience.rawValue)"
        case .erased:
            return "DELETE FROM \(identifier: table) WHERE user_id = \(user)"
        case .confirmed:
            return nil
        }
    }

    // MARK: Reads

    /// Up to `limit` of the user's favorites of one experience after `cursor`, in its sort order, those whose title
    /// (or a card's fact) contains `text` when one is given, each with the version of the event that added it (for the
    /// next cursor). Keyset pagination: each page starts where the last one ended, whatever was added or removed in
    /// between. Items without the value sorted on come last, by id.
    static func page(user: UUID, experience: ExperienceID, after cursor: FavoritePageCursor, matching text: String?,
                     limit: Int, on connection: isolated PostgresConnection) async throws
        -> [(favorite: Favorite, version: Int64)]
    {
        let pattern = text.map { "%" + escapedForLike($0.lowercased()) + "%" }
        let mine: SQL = """
            user_id = \(user) AND experience = \(experience.rawValue)
            AND (\(pattern)::text IS NULL OR lower(normalize(title, NFC)) LIKE \(pattern) ESCAPE '\\'
                 OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(facts) AS fact
                             WHERE lower(normalize(fact, NFC)) LIKE \(pattern) ESCAPE '\\'))
            """
        let (after, order): (SQL, StaticString) = switch cursor.sort {
        case .recent: ("version < \(cursor.version)", "version DESC")
        case .oldest: ("version > \(cursor.version)", "version")
        case .title: ("(lower(title), item_id) > (lower(\(cursor.title)), \(cursor.itemId))", "lower(title), item_id")
        case .price: (ascending("price", cursor.price, cursor.itemId), "price NULLS LAST, item_id")
        case .priceDescending: (descending("price", cursor.price, cursor.itemId), "price DESC NULLS LAST, item_id")
        case .ratingDescending: (descending("rating", cursor.rating, cursor.itemId), "rating DESC NULLS LAST, item_id")
        case .date: (soonerFirst(after: cursor.when, cursor.itemId),
                     "((local_date || 'T' || coalesce(local_time, '')) COLLATE \"C\") NULLS LAST, item_id")
        }
        let result = try await connection.query("""
            SELECT \(raw: columns), version FROM favorites
             WHERE \(fragment: mine) AND \(fragment: after)
             ORDER BY \(raw: order) LIMIT \(limit)
            """, prepare: true)
        return try result.rows.map { row in (try favorite(row), try row.decode(Int64.self, at: 14)) }
    }

    /// An event's "when" as ``Favorite/when`` computes it, compared byte by byte (ISO 8601 text in time order); the
    /// `date` order spells the same expression.
    private static let whenColumn: StaticString = "((local_date || 'T' || coalesce(local_time, '')) COLLATE \"C\")"

    /// After (`when`, `itemId`) soonest first, dated rows before the rest.
    private static func soonerFirst(after when: String?, _ itemId: String) -> SQL {
        """
        CASE WHEN \(when)::text IS NULL THEN local_date IS NULL AND item_id > \(itemId)
             ELSE \(raw: whenColumn) > (\(when)::text COLLATE "C") OR local_date IS NULL
                  OR (\(raw: whenColumn) = (\(when)::text COLLATE "C") AND item_id > \(itemId)) END
        """
    }

    /// After (`value`, `itemId`) in ascending order of `column` (a fixed column name), valued rows before the rest.
    private static func ascending(_ column: StaticString, _ value: Double?, _ itemId: String) -> SQL {
        """
        CASE WHEN \(value)::float8 IS NULL THEN \(raw: column) IS NULL AND item_id > \(itemId)
             ELSE \(raw: column) > \(value)::float8 OR \(raw: column) IS NULL
                  OR (\(raw: column) = \(value)::float8 AND item_id > \(itemId)) END
        """
    }

    /// After (`value`, `itemId`) in descending order of `column`, valued rows before the rest.
    private static func descending(_ column: StaticString, _ value: Double?, _ itemId: String) -> SQL {
        """
        CASE WHEN \(value)::float8 IS NULL THEN \(raw: column) IS NULL AND item_id > \(itemId)
             ELSE \(raw: column) < \(value)::float8 OR \(raw: column) IS NULL
                  OR (\(raw: column) = \(value)::float8 AND item_id > \(itemId)) END
        """
    }

    /// `%`, `_` and the escape character match only themselves.
    static func escapedForLike(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
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

    /// The `item` column as it is written: ISO 8601 dates (an event's start).
    private static let cellDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// A row of ``columns``.
    static func favorite(_ row: PostgresRow) throws -> Favorite {
        let (experience, itemId, title, subtitle, imageURL, price, rating, at, localDate, localTime) =
            try row.decode((String, String, String, String?, String?, Double?, Double?, Date, String?, String?).self)
        let rank = try row.decode(Int?.self, at: 10)
        let facts = try row.decode(String?.self, at: 11).flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
        let written = try row.decode(Bool.self, at: 12)
        let item = try row.decode(String?.self, at: 13).flatMap { try? cellDecoder.decode(CatalogItem.self, from: Data($0.utf8)) }
        // Through the snapshot, so that a row without `item` (an earlier favorite) gets it rebuilt from its columns.
        let snapshot = FavoriteSnapshot(Favorite(
            experience: ExperienceID(rawValue: experience), itemId: itemId, title: title, subtitle: subtitle,
            imageURL: imageURL, price: price, rating: rating, localDate: localDate, localTime: localTime, rank: rank,
            facts: facts, writtenByUser: written ? true : nil, favoritedAt: at, item: item))
        return Favorite(snapshot, favoritedAt: at)
    }
}
