import Contracts
import EventStore
import Foundation
import Postgres

/// The statements that apply a batch of events to the views set-wise (see ``BatchEffect``): a handful per batch,
/// whatever its size, where one by one took a statement per event. Rebuilds and the async projection use them.
enum ViewBatch {
    /// The batch's events as the projections read them; events of other types, or of no user, change nothing.
    /// Without `items`, each event's item copy is skipped, not decoded: what a projection that never shows it reads.
    static func effect(of events: [RecordedEvent], items: Bool = true) throws -> BatchEffect {
        BatchEffect(try events.compactMap { recorded in
            guard let user = FavoritesStore.user(ofStream: recorded.streamID),
                  let event = try FavoriteEvent(items ? recorded : withoutItem(recorded))
            else { return nil }
            return (user, event, recorded.version, recorded.recordedAt)
        })
    }

    private static func withoutItem(_ recorded: RecordedEvent) -> RecordedEvent {
        let bytes = Array(recorded.data.utf8)
        guard let item = JSONText.valueRange(of: "item", in: bytes) else { return recorded }
        var lean = recorded
        lean.data = JSONText.nulling(item, in: bytes)
        return lean
    }

    /// The per-user favorites view: the rows the removals cover go, the additions come (an existing row stays).
    static func favorites(_ effect: BatchEffect, table: String) throws -> [SQL] {
        var statements: [SQL] = []
        if !effect.removals.isEmpty {
            statements.append("""
                DELETE FROM \(identifier: table) AS f
                 USING jsonb_to_recordset(\(try json(effect.removals))::jsonb)
                       AS r(kind text, "user" uuid, experience text, "itemId" text)
                 WHERE \(raw: covered)
                """)
        }
        if !effect.additions.isEmpty {
            statements.append("""
                INSERT INTO \(identifier: table) (user_id, experience, item_id, title, subtitle, image_url, price,
                                                  rating, local_date, local_time, rank, facts, written, favorited_at,
                                                  version, item)
                SELECT "user", f->>'experience', f->>'itemId', f->>'title', f->>'subtitle', f->>'imageURL',
                       (f->>'price')::float8, (f->>'rating')::float8, f->>'localDate', f->>'localTime',
                       (f->>'rank')::int, (f->'facts')::jsonb, coalesce((f->>'written')::bool, false),
                       "at"::timestamptz, version, f->'item'
                  FROM json_to_recordset(\(try json(effect.additions.map(Row.init)))::json)
                       AS a("user" uuid, f json, "at" text, version bigint)
                ON CONFLICT (user_id, experience, item_id) DO NOTHING
                """)
        }
        return statements
    }

    /// "Most favorited": members the removals cover leave (their items counted one less each), the additions join
    /// (one more each, unless already members), every item added in the batch shows its latest title, and items
    /// nobody favorites any more go. Cards users write are theirs alone and never counted.
    static func popular(_ effect: BatchEffect, items: String, members: String) throws -> [SQL] {
        var statements: [SQL] = []
        if !effect.removals.isEmpty {
            statements.append("""
                WITH gone AS (
                    DELETE FROM \(identifier: members) AS f
                     USING jsonb_to_recordset(\(try json(effect.removals))::jsonb)
                           AS r(kind text, "user" uuid, experience text, "itemId" text)
                     WHERE \(raw: covered)
                    RETURNING f.experience, f.item_id)
                UPDATE \(identifier: items) AS counted SET favorite_count = counted.favorite_count - gone_items.n
                  FROM (SELECT experience, item_id, count(*) AS n FROM gone GROUP BY experience, item_id) AS gone_items
                 WHERE counted.experience = gone_items.experience AND counted.item_id = gone_items.item_id
                """)
        }
        let joining = effect.additions.filter { $0.favorite.written != true }.map(Member.init)
        if !effect.latestAdds.isEmpty {
            statements.append("""
                WITH joined AS (
                    INSERT INTO \(identifier: members) (user_id, experience, item_id)
                    SELECT "user", experience, "itemId"
                      FROM jsonb_to_recordset(\(try json(joining))::jsonb)
                           AS a("user" uuid, experience text, "itemId" text)
                    ON CONFLICT DO NOTHING RETURNING experience, item_id),
                counts AS (SELECT experience, item_id, count(*) AS n FROM joined GROUP BY experience, item_id)
                INSERT INTO \(identifier: items) AS counted
                       (experience, item_id, title, subtitle, image_url, favorite_count)
                SELECT latest.experience, latest."itemId", latest.title, latest.subtitle, latest."imageURL",
                       coalesce(counts.n, 0)
                  FROM jsonb_to_recordset(\(try json(effect.latestAdds))::jsonb)
                       AS latest(experience text, "itemId" text, title text, subtitle text, "imageURL" text)
                  LEFT JOIN counts ON counts.experience = latest.experience AND counts.item_id = latest."itemId"
                ON CONFLICT (experience, item_id) DO UPDATE
                   SET favorite_count = counted.favorite_count + excluded.favorite_count, title = excluded.title,
                       subtitle = excluded.subtitle, image_url = excluded.image_url
                """)
        }
        if !statements.isEmpty {
            statements.append("DELETE FROM \(identifier: items) WHERE favorite_count = 0")
        }
        return statements
    }

    /// Which rows (`f`) a removal (`r`) covers: its user's, in its experience, of its item (or all of them).
    private static let covered: StaticString = """
        f.user_id = r."user" AND (r.kind = 'erased' OR (f.experience = r.experience
                                  AND (r.kind = 'cleared' OR f.item_id = r."itemId")))
        """

    /// An addition as its JSON row: the user, the favorite's snapshot (`f`, as its events store it) and the event's
    /// version and time (in PostgreSQL's own text, so a rebuilt row holds the event's microseconds).
    private struct Row: Encodable {
        var user: UUID
        var f: FavoriteSnapshot
        var at: String
        var version: Int64

        init(_ addition: BatchEffect.Addition) {
            user = addition.user
            f = addition.favorite
            at = addition.at.postgresText
            version = addition.version
        }
    }

    /// An addition as the members' table needs it: who, and which item. Only these, not the favorite's snapshot,
    /// so neither the service nor PostgreSQL handles JSON that nothing reads.
    private struct Member: Encodable {
        var user: UUID
        var experience: String
        var itemId: String

        init(_ addition: BatchEffect.Addition) {
            user = addition.user
            experience = addition.favorite.experience
            itemId = addition.favorite.itemId
        }
    }

    /// As the event store and a write keep the view's `item` (sorted keys, ISO 8601 dates): `json` keeps the text
    /// as written, so a rebuilt row's bytes equal the live one's.
    private static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
