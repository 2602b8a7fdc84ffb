import Contracts
import EventStore
import Foundation
import Postgres

/// The one statement of each write to a user's favorites: it decides, appends the event, changes the view and
/// reports what it did, in one go. ``FavoritesWriter`` sends it in one pipeline: BEGIN, ``locks(_:)``, the
/// statement, COMMIT. Under READ COMMITTED a statement reads with a snapshot taken when it starts: this one starts
/// once the lock statement holds the stream's lock, so it reads every write that held the lock before. A stream's
/// version is the highest version in its log (`max(version)`, one probe of its key). A statement holds only the
/// decisions its write can meet, so PostgreSQL sets up no plan nodes that cannot matter; its text depends on nothing
/// else (its values are parameters), so each session prepares each of its few shapes once.
enum FavoritesWriteStatements {
    /// What every write sends after BEGIN, before its statement: the streams' locks (writers of one stream queue
    /// there, others never wait), behind the gate a rebuild's switch-over closes (``EventStore/switchOverGate``).
    static func locks(_ streams: [String]) -> SQL {
        EventStore.locking(streams)
    }

    /// What a write is, besides its statement: the user's stream, the request's event and its metadata.
    struct Write: Sendable {
        var user: UUID
        var stream: String
        /// The request's event id: its `Idempotency-Key`'s, or a new one.
        var eventID: UUID
        /// An `Idempotency-Key` came: the request's event is looked for, and recorded even when nothing changes.
        var keyed: Bool
        var metadata: EventMetadata
        var now: Date

        init(_ request: WriteRequest, at now: Date) {
            user = request.user
            stream = FavoritesStore.stream(of: request.user)
            eventID = request.id
            keyed = request.hasIdempotencyKey
            metadata = request.metadata
            self.now = now
        }
    }

    /// PUT of a catalog item and POST of a card: `snapshot` becomes a favorite (event `type`, `favorite-added` or
    /// `card-written`), unless the request is a retry ('retry': nothing written, the earlier event reported), the
    /// item is a favorite already ('existing', or 'confirmed' and recorded when keyed, so that its retry gets it
    /// again), there is no room, or `freeTitle` is held by another item ('title-taken'). A stream shorter than
    /// `maximum` cannot hold `maximum` favorites (each took an event), so only a longer one counts, and only when
    /// `counted`: without it, the statement reports 'count-first' and writes nothing, and the writer sends it again
    /// counted. Reports: outcome, title holder, favorite found (JSON), earlier event (type, schema version, JSON, time,
    /// version), the version an added favorite gets.
    static func favorite(_ encoded: EncodedSnapshot, as type: String, _ write: Write, freeTitle: String?,
                         maximum: Int, counted: Bool) -> SQL {
        let snapshot = encoded.snapshot
        let (user, experience, itemId) = (write.user, snapshot.experience, snapshot.itemId)
        let (data, facts, item) = (encoded.data, encoded.facts, encoded.item)
        // Fragments that begin a line of their own, or are empty: the statement as sent reads as written.
        // Uncounted, a long stream is sent again counted; counted, it is counted.
        let room: SQL = if counted {
            """

                           WHEN kept.item_id IS NULL AND head.version >= \(maximum)::integer
                                AND EXISTS (SELECT FROM favorites WHERE user_id = \(user)::uuid
                                               AND experience = \(experience)::text OFFSET \(maximum)::integer - 1)
                                THEN 'limit-reached'
            """
        } else {
            """

                           WHEN kept.item_id IS NULL AND head.version >= \(maximum)::integer THEN 'count-first'
            """
        }
        // Only an item a user writes has a title that no other of theirs may hold.
        let titleTaken: SQL = freeTitle == nil ? "" : """

                           WHEN holder.title IS NOT NULL THEN 'title-taken'
            """
        let titleHolder: SQL = freeTitle == nil ? "NULL::text" : "holder.title"
        let holder: SQL = freeTitle == nil ? "" : """

                  LEFT JOIN LATERAL (
                      SELECT title FROM favorites AS other
                       WHERE other.user_id = \(user)::uuid AND other.experience = \(experience)::text
                         AND other.item_id <> \(itemId)::text
                         AND lower(normalize(btrim(other.title), NFC))
                             = lower(normalize(btrim(\(freeTitle)::text), NFC))
                       LIMIT 1) AS holder ON true
            """
        return """
            WITH decision AS MATERIALIZED (
                SELECT CASE
                           WHEN earlier.event_id IS NOT NULL THEN 'retry'\(fragment: room)\(fragment: titleTaken)
                           WHEN kept.item_id IS NOT NULL AND \(write.keyed)::boolean THEN 'confirmed'
                           WHEN kept.item_id IS NOT NULL THEN 'existing'
                           ELSE 'added'
                       END AS outcome,
                       \(fragment: titleHolder) AS title_holder,
                       head.version + 1 AS next_version,
                       -- The favorite found: the answer of 'existing', and what 'confirmed' records.
                       CASE WHEN kept.item_id IS NOT NULL THEN json_build_object(
                           'favorite', json_build_object(
                               'experience', kept.experience, 'itemId', kept.item_id, 'title', kept.title,
                               'subtitle', kept.subtitle, 'imageURL', kept.image_url, 'price', kept.price,
                               'rating', kept.rating, 'localDate', kept.local_date, 'localTime', kept.local_time,
                               'rank', kept.rank, 'facts', kept.facts, 'written', kept.written, 'item', kept.item),
                           'favoritedAt', extract(epoch FROM kept.favorited_at), 'version', kept.version)
                       END AS kept_favorite,
                       earlier.event_type, earlier.schema_version, earlier.data::text AS earlier_data,
                       earlier.recorded_at, earlier.version AS earlier_version
                  FROM (SELECT coalesce(max(version), 0) AS version FROM events
                         WHERE stream_id = \(write.stream)::text) AS head
                  LEFT JOIN events AS earlier
                         ON \(write.keyed)::boolean AND earlier.event_id = \(write.eventID)::uuid
                            AND earlier.stream_id = \(write.stream)::text
                  LEFT JOIN favorites AS kept
                         ON kept.user_id = \(user)::uuid AND kept.experience = \(experience)::text
                            AND kept.item_id = \(itemId)::text\(fragment: holder)
            ), appended AS (
                INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata,
                                    recorded_at)
                SELECT \(write.stream)::text, next_version, \(write.eventID)::uuid,
                       CASE outcome WHEN 'added' THEN \(type)::text ELSE \(FavoriteEvent.confirmedType)::text END, 1,
                       CASE outcome WHEN 'added' THEN \(data)::json ELSE kept_favorite END,
                       \(write.metadata)::json, \(write.now)::timestamptz
                  FROM decision WHERE outcome IN ('added', 'confirmed')
            ), viewed AS (
                INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating,
                                       local_date, local_time, rank, facts, written, favorited_at, version, item)
                SELECT \(user)::uuid, \(experience)::text, \(itemId)::text, \(snapshot.title)::text,
                       \(snapshot.subtitle)::text, \(snapshot.imageURL)::text, \(snapshot.price)::float8,
                       \(snapshot.rating)::float8, \(snapshot.localDate)::text, \(snapshot.localTime)::text,
                       \(snapshot.rank)::integer, \(facts)::jsonb, \(snapshot.written == true)::boolean,
                       \(write.now)::timestamptz, next_version, \(item)::json
                  FROM decision WHERE outcome = 'added'
            )
            SELECT outcome, title_holder, kept_favorite::text AS kept_favorite, event_type, schema_version,
                   earlier_data, recorded_at, earlier_version, next_version
              FROM decision
            """
    }

    /// A snapshot with the JSON a favorite's statement binds, encoded once: the event's data, the view's copies of the
    /// item and the facts. ``RecentItems`` keeps these, so that favoriting an item again encodes nothing.
    struct EncodedSnapshot: Sendable {
        let snapshot: FavoriteSnapshot
        let data: String
        let item: String?
        let facts: String?

        init(_ snapshot: FavoriteSnapshot) throws {
            self.snapshot = snapshot
            data = try NewEvent(id: UUID(), type: "", data: snapshot, metadata: EventMetadata()).data
            item = snapshot.item.map { PostgresJSON($0).postgresText }
            facts = snapshot.facts.map { PostgresJSON($0).postgresText }
        }
    }

    /// What ``favorite(_:as:_:freeTitle:maximum:counted:)`` reports.
    static func favoriteReport(_ row: PostgresRow) throws -> FavoriteReport {
        let outcome = try row.decode(String.self, column: "outcome")
        guard let known = FavoriteReport.Outcome(rawValue: outcome) else {
            throw PostgresError.client("a favorite's statement reported \(outcome)")
        }
        let kept = try row.decode(String?.self, column: "kept_favorite").flatMap { text -> Favorite? in
            guard case .confirmed(let snapshot, let favoritedAt, let version?)? = FavoriteEvent.decode(
                type: FavoriteEvent.confirmedType, schemaVersion: 1, data: Data(text.utf8)) else { return nil }
            return Favorite(snapshot, favoritedAt: favoritedAt, version: version)
        }
        return FavoriteReport(outcome: known, titleHolder: try row.decode(String?.self, column: "title_holder"),
                              kept: kept, nextVersion: try row.decode(Int64.self, column: "next_version"),
                              earlier: try FavoritesStore.earlierEvent(row))
    }

    /// DELETE of one favorite. Unkeyed: what is removed is recorded, nothing to remove writes nothing ('removed',
    /// 'not-there'). Keyed: the request is recorded first, and only a request recorded now (not a retry) removes
    /// anything (a retry must not remove what was favorited after the first request); with nothing to remove it is
    /// recorded all the same, so that its retry is recognised ('retry', 'removed', 'recorded').
    static func unfavorite(_ itemId: String, of experience: ExperienceID, _ write: Write) -> SQL {
        let data: SQL = "json_build_object('experience', \(experience.rawValue)::text, 'itemId', \(itemId)::text)"
        let mine: SQL = """
            user_id = \(write.user)::uuid AND experience = \(experience.rawValue)::text AND item_id = \(itemId)::text
            """
        return removal(FavoriteEvent.removedType, data: data, of: mine, write, done: "removed")
    }

    /// DELETE of every favorite of one experience, in one event, as ``unfavorite(_:of:_:)`` ('cleared' for
    /// 'removed', 'nothing' for 'not-there').
    static func clear(_ experience: ExperienceID, _ write: Write) -> SQL {
        let data: SQL = "json_build_object('experience', \(experience.rawValue)::text)"
        let mine: SQL = "user_id = \(write.user)::uuid AND experience = \(experience.rawValue)::text"
        return removal(FavoriteEvent.clearedType, data: data, of: mine, write, done: "cleared")
    }

    /// Whether the removal's statement appended its event, from its report.
    static func removalAppended(_ row: PostgresRow) throws -> Bool {
        !["retry", "not-there"].contains(try row.decode(String.self, column: "outcome"))
    }

    /// A removal of the favorites `mine` covers, recorded as an event of `type` with `data`. Reports: outcome.
    private static func removal(_ type: String, data: SQL, of mine: SQL, _ write: Write, done: StaticString) -> SQL {
        if write.keyed {
            return """
                WITH appended AS (
                    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata,
                                        recorded_at)
                    SELECT \(write.stream)::text, coalesce(max(version), 0) + 1, \(write.eventID)::uuid, \(type)::text, 1,
                           \(fragment: data), \(write.metadata)::json, \(write.now)::timestamptz
                      FROM events WHERE stream_id = \(write.stream)::text
                    ON CONFLICT (event_id) DO NOTHING  -- the request's event is in the log already: a retry
                    RETURNING version
                ), removed AS (
                    DELETE FROM favorites WHERE \(fragment: mine) AND EXISTS (SELECT FROM appended) RETURNING item_id
                )
                SELECT CASE WHEN NOT EXISTS (SELECT FROM appended) THEN 'retry'
                            WHEN EXISTS (SELECT FROM removed) THEN '\(raw: done)'
                            ELSE 'recorded' END AS outcome
                """
        }
        return """
            WITH removed AS (
                DELETE FROM favorites WHERE \(fragment: mine) RETURNING item_id
            ), appended AS (
                INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata,
                                    recorded_at)
                SELECT \(write.stream)::text,
                       (SELECT coalesce(max(version), 0) + 1 FROM events WHERE stream_id = \(write.stream)::text),
                       \(write.eventID)::uuid, \(type)::text, 1, \(fragment: data), \(write.metadata)::json,
                       \(write.now)::timestamptz
                 WHERE EXISTS (SELECT FROM removed)
            )
            SELECT CASE WHEN EXISTS (SELECT FROM removed) THEN '\(raw: done)' ELSE 'not-there' END AS outcome
            """
    }
}
