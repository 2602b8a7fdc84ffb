import Contracts
import EventStore
import Foundation
import Postgres

/// The favorites view and the user's event stream, in SQL: the reads. A write is one statement of
/// ``FavoritesWriteStatements``, sent by ``FavoritesWriter``.
struct FavoritesStore: Sendable {
    let pool: DatabasePool

    /// One stream per user.
    static func stream(of user: UUID) -> String { "user-" + user.lowercasedText }

    /// The user whose stream `stream` is.
    static func user(ofStream stream: String) -> UUID? {
        stream.hasPrefix("user-") ? UUID(uuidString: String(stream.dropFirst(5))) : nil
    }

    /// The columns ``stored(_:)`` reads.
    static let columns: StaticString = """
        experience, item_id, title, subtitle, image_url, price, rating, favorited_at, local_date, local_time, rank,
        facts::text AS facts, written, item::text AS item, version
        """

    // MARK: Writes (see FavoritesWriteStatements)

    /// The request's event `id`, if the user's stream holds it: outside a write, for a retry to be answered before
    /// anything else is asked.
    func earlierEvent(_ id: UUID, of user: UUID) async throws -> EarlierEvent? {
        let rows = try await pool.query("""
            SELECT event_type, schema_version, data::text AS earlier_data, recorded_at, version AS earlier_version
              FROM events
             WHERE event_id = \(id) AND stream_id = \(Self.stream(of: user))
            """, prepare: true).rows
        return try rows.first.flatMap(Self.earlierEvent)
    }

    /// An event's `event_type`, `schema_version`, `earlier_data`, `recorded_at` and `earlier_version` (all NULL: no
    /// event).
    static func earlierEvent(_ row: PostgresRow) throws -> EarlierEvent? {
        guard let type = try row.decode(String?.self, column: "event_type") else { return nil }
        let (schemaVersion, data, recordedAt) = try (row.decode(Int.self, column: "schema_version"),
                                                     row.decode(String.self, column: "earlier_data"),
                                                     row.decode(Date.self, column: "recorded_at"))
        return EarlierEvent(event: FavoriteEvent.decode(type: type, schemaVersion: schemaVersion, data: Data(data.utf8)),
                            recordedAt: recordedAt, version: try row.decode(Int64.self, column: "earlier_version"))
    }

    // MARK: Reads

    /// Up to `limit` of the user's favorites of one experience after `cursor`, in its sort order, those whose title
    /// (or a card's fact) contains `text` when one is given, each with what its columns say (for the next cursor).
    /// Keyset pagination: each page starts where the last one ended, whatever was added or removed in
    /// between. Items without the value sorted on come last, by id.
    /// Its rows are read with ``stored(_:)`` (and ``snapshot(_:)`` for the next page's cursor).
    static func page(user: UUID, experience: ExperienceID, after cursor: FavoritePageCursor, matching text: String?,
                     limit: Int) -> SQL
    {
        // Without a text, a statement without its filter: one whose plan is the same for every value, so the
        // server keeps one plan rather than planning an optional filter anew on each execution.
        let mine: SQL = if let text {
            """
            user_id = \(user) AND experience = \(experience.rawValue)
            AND (lower(normalize(title, NFC)) LIKE \(Self.containing(text)) ESCAPE '\\'
                 OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(facts) AS fact
                             WHERE lower(normalize(fact, NFC)) LIKE \(Self.containing(text)) ESCAPE '\\'))
            """
        } else {
            "user_id = \(user) AND experience = \(experience.rawValue)"
        }
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
        return """
            SELECT \(raw: columns) FROM favorites
             WHERE \(fragment: mine) AND \(fragment: after)
             ORDER BY \(raw: order) LIMIT \(limit)
            """
    }

    /// An event's "when" as ``FavoriteSnapshot/when`` computes it, compared byte by byte (ISO 8601 text in time
    /// order); the `date` order spells the same expression.
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

    /// A `LIKE` pattern of what contains `text`, in lower case.
    static func containing(_ text: String) -> String { "%" + escapedForLike(text.lowercased()) + "%" }

    /// `%`, `_` and the escape character match only themselves.
    static func escapedForLike(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
    }

    /// The ids of the user's favorites of one experience, sorted (one column, `item_id`).
    static func ids(user: UUID, experience: ExperienceID) -> SQL {
        "SELECT item_id FROM favorites WHERE user_id = \(user) AND experience = \(experience.rawValue) ORDER BY item_id"
    }

    /// The user's stream version (what `ETag`s follow) and the rows of `read`, sent together: one round trip.
    func versioned(user: UUID, reading read: SQL) async throws -> (version: Int64, rows: QueryResult) {
        let statements = [EventStore.versionStatement(of: Self.stream(of: user)), read]
        let results = try await pool.withSession { try await $0.pipeline(statements, prepare: true) }
        return (try results[0].scalar(Int64.self), results[1])
    }

    /// A row of ``columns``: the favorite, its item as stored, never decoded. A favorite recorded before items were
    /// kept (`item` NULL) gets the one its columns say, encoded here (``FavoriteSnapshot/cellItem``).
    static func stored(_ row: PostgresRow) throws -> StoredFavorite {
        let item = try row.decode(String?.self, column: "item")
            ?? String(decoding: try cellEncoder.encode(snapshot(row).cellItem), as: UTF8.self)
        return StoredFavorite(item: item, favoritedAt: try row.decode(Date.self, column: "favorited_at"),
                              version: try row.decode(Int64.self, column: "version"))
    }

    /// What a row of ``columns`` says of its item besides the stored copy: what lists sort and filter on (a page's
    /// cursor), and the copy of a favorite recorded before items were kept.
    static func snapshot(_ row: PostgresRow) throws -> FavoriteSnapshot {
        let facts = try row.decode(String?.self, column: "facts")
            .flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
        return FavoriteSnapshot(
            experience: try row.decode(String.self, column: "experience"),
            itemId: try row.decode(String.self, column: "item_id"), title: try row.decode(String.self, column: "title"),
            subtitle: try row.decode(String?.self, column: "subtitle"),
            imageURL: try row.decode(String?.self, column: "image_url"),
            price: try row.decode(Double?.self, column: "price"),
            rating: try row.decode(Double?.self, column: "rating"),
            localDate: try row.decode(String?.self, column: "local_date"),
            localTime: try row.decode(String?.self, column: "local_time"),
            rank: try row.decode(Int?.self, column: "rank"), facts: facts,
            written: try row.decode(Bool.self, column: "written") ? true : nil)
    }

    /// As writes keep the `item` column (``PostgresJSON``): sorted keys, ISO 8601 dates.
    private static let cellEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
}
