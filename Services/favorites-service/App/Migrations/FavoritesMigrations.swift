import EventStore
import Postgres

/// The favorites schema's migrations: numbered from 1, append-only, never edited once released (the migrator refuses
/// an edited one). Each runs in the schema, in one transaction with the others pending.
enum FavoritesMigrations {
    static let all: [Migration] = [
        Migration(1, "event_store", sql: EventStoreSchema.sql),
        Migration(2, "favorites_view", sql: """
            -- The per-user view, updated in the same transaction as each append: every replica reads its own writes.
            CREATE TABLE favorites (
                user_id       uuid NOT NULL,
                experience    text NOT NULL,
                item_id       text NOT NULL,
                title         text NOT NULL,
                subtitle      text,
                image_url     text,
                price         double precision,
                rating        double precision,
                favorited_at  timestamptz NOT NULL,
                version       bigint NOT NULL,   -- the stream version of the event that added it
                PRIMARY KEY (user_id, experience, item_id)
            );
            CREATE INDEX favorites_recent ON favorites (user_id, experience, favorited_at DESC, item_id);
            """),
        Migration(3, "erasure_checkpoint", sql: """
            -- How far the account deletions published by auth-service have been applied here.
            CREATE TABLE erasure_checkpoint (
                singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                deleted_since  timestamptz NOT NULL
            );
            INSERT INTO erasure_checkpoint (deleted_since) VALUES ('1970-01-01T00:00:00Z');
            """),
        Migration(4, "projection_checkpoints", sql: EventStoreSchema.projectionsSQL),
        Migration(5, "popular_items", sql: """
            -- "Most favorited per experience", kept by an async projection: counts, and who is counted in them.
            CREATE TABLE popular_items (
                experience      text NOT NULL,
                item_id         text NOT NULL,
                title           text NOT NULL,
                subtitle        text,
                image_url       text,
                favorite_count  bigint NOT NULL CHECK (favorite_count >= 0),
                PRIMARY KEY (experience, item_id)
            );
            CREATE INDEX popular_items_ranking ON popular_items (experience, favorite_count DESC, item_id);
            CREATE INDEX popular_items_unfavorited ON popular_items (item_id) WHERE favorite_count = 0;
            CREATE TABLE popular_members (
                user_id     uuid NOT NULL,
                experience  text NOT NULL,
                item_id     text NOT NULL,
                PRIMARY KEY (user_id, experience, item_id)
            );
            """),
        Migration(6, "favorites_by_version", sql: """
            -- Lists page by the version of the adding event (recent, oldest): an index the keyset cursor can seek in.
            CREATE INDEX favorites_by_version ON favorites (user_id, experience, version);
            DROP INDEX favorites_recent;
            """),
        Migration(7, "favorites_event_time", sql: """
            -- When an event favorite is, at the venue, for the Favorites tab. Rows of earlier favorites stay NULL (their
            -- events did not record it); a rebuild gives the same.
            ALTER TABLE favorites ADD COLUMN local_date text, ADD COLUMN local_time text;
            """),
        Migration(8, "favorites_for_every_kind", sql: """
            -- What each kind of item's cell needs besides the common columns: a book's rank, a card's facts, and
            -- whether the user wrote the card. Rows of earlier favorites have none (their events did not record them);
            -- a rebuild gives the same. Titles are compared without case or surrounding spaces (a user's cards never
            -- share one), and a favorites list filters on them.
            ALTER TABLE favorites ADD COLUMN rank integer, ADD COLUMN facts jsonb,
                                  ADD COLUMN written boolean NOT NULL DEFAULT false;
            CREATE INDEX favorites_by_title ON favorites (user_id, experience, lower(btrim(title)));
            """),
        Migration(9, "favorites_cell_item", sql: """
            -- The item as its list cell shows it, in the catalog's shape (a phone's description, a book's list and
            -- weeks, an event's prices, list-sized images). Rows of earlier favorites stay NULL: their item is rebuilt
            -- from the columns above when read; a rebuild gives the same.
            ALTER TABLE favorites ADD COLUMN item jsonb;
            """),
        Migration(10, "stream_lock", sql: EventStoreSchema.lockFunctionSQL),
        Migration(11, "favorites_write_state", sql: """
            -- What a write to a user's favorites decides on, read under their stream's lock, in one statement: the
            -- favorite of the item named, if it is one, in FavoritesStore's column order; the stream's version; how
            -- many favorites the user keeps in the experience; the favorite whose title equals `wanted_title` without
            -- case or surrounding spaces (when one is given); the request's event, if the stream holds it (a retry).
            -- The read runs after the lock is held, and each statement of a VOLATILE function reads with a snapshot
            -- of its own: it sees every write that held the lock before. (A plain statement that took the lock would
            -- read what was committed before it waited.) PL/pgSQL keeps the read's plan for the session.
            CREATE FUNCTION favorites_write_state(stream text, writer uuid, wanted_experience text, wanted_item text,
                                                  wanted_title text, request_event uuid)
            RETURNS TABLE (experience text, item_id text, title text, subtitle text, image_url text,
                           price double precision, rating double precision, favorited_at timestamptz,
                           local_date text, local_time text, rank integer, facts text, written boolean, item text,
                           stream_version bigint, favorite_count integer, title_holder_id text, title_holder text,
                           event_type text, event_schema_version integer, event_data text,
                           event_recorded_at timestamptz)
            LANGUAGE plpgsql VOLATILE AS $$
            #variable_conflict use_column
            DECLARE
                version_now bigint := lock_event_stream(stream);
            BEGIN
                RETURN QUERY
                SELECT f.experience, f.item_id, f.title, f.subtitle, f.image_url, f.price, f.rating, f.favorited_at,
                       f.local_date, f.local_time, f.rank, f.facts::text, f.written, f.item::text,
                       version_now,
                       (SELECT count(*)::integer FROM favorites c
                         WHERE c.user_id = writer AND c.experience = wanted_experience),
                       h.item_id, h.title,
                       e.event_type, e.schema_version, e.data::text, e.recorded_at
                  FROM (VALUES (1)) AS one (row)
                  LEFT JOIN favorites f
                         ON f.user_id = writer AND f.experience = wanted_experience AND f.item_id = wanted_item
                  LEFT JOIN LATERAL (
                      SELECT t.item_id, t.title FROM favorites t
                       WHERE wanted_title IS NOT NULL AND t.user_id = writer AND t.experience = wanted_experience
                         AND lower(normalize(btrim(t.title), NFC)) = lower(normalize(btrim(wanted_title), NFC))
                       LIMIT 1) h ON true
                  LEFT JOIN events e ON e.event_id = request_event AND e.stream_id = stream;
            END;
            $$;
            """),
        Migration(12, "lean_writes", sql: """
            -- A write is one pipeline (issue #50): BEGIN, the stream's lock, one statement that decides, appends,
            -- changes the view and answers (FavoritesWriteStatements), COMMIT. What it no longer needs goes.
            DROP FUNCTION favorites_write_state(text, uuid, text, text, text, uuid);
            -- Item copies are kept as catalog-proxy sent them and served as stored: json keeps the text (and checks
            -- it is JSON), where jsonb parsed every copy into a tree on each write and printed it again on each read.
            ALTER TABLE favorites ALTER COLUMN item TYPE json USING item::json;
            -- No query reads it (the title check compares lower(normalize(btrim(title), NFC)) among the user's
            -- favorites of the experience, reached by the primary key), yet every favorite written paid for it.
            DROP INDEX favorites_by_title;
            """),
        Migration(13, "lean_log", sql: EventStoreSchema.leanLogSQL),
        Migration(14, "cell_sized_favorites", sql: """
            -- Pictures at a list cell's size, as SizedImage.cell asks for them, in the view's rows once, so that a list
            -- serves each stored item as it is: favorites recorded before the catalog sized the museum's pictures
            -- ask for the original (Google-hosted `=s0`, several megabytes; IIIF `full/max`). Google-hosted: the size
            -- suffix (from the name's last `=`) becomes `=s400`; IIIF: the size segment becomes `400,`. The events
            -- keep what the catalog answered then: they are sized where they are read (FavoriteSnapshot.sized). The
            -- rule is a function for this migration only (the service's role may not create temporary objects).
            CREATE FUNCTION favorites_cell_sized(url text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
                SELECT CASE
                    WHEN url ~* '^https?://[^/?#]*\\.(googleusercontent|ggpht)\\.com/([^?#]*/)?[^/?#=][^/?#]*$'
                        THEN regexp_replace(url, '=[^/=]*$', '') || '=s400'
                    WHEN url ~ '/full/[^/?#]*/[^/?#]*/default\\.[^/?#]*([?#]|$)'
                        THEN regexp_replace(url, '/full/[^/?#]*/([^/?#]*/default\\.[^/?#]*)([?#]|$)', '/full/400,/\\1\\2')
                    ELSE url
                END
            $$;
            UPDATE favorites
               SET image_url = favorites_cell_sized(image_url),
                   item = CASE WHEN item->>'imageURL' IS NULL THEN item
                               ELSE (item::jsonb || jsonb_build_object('imageURL', favorites_cell_sized(item->>'imageURL')))::json
                          END
             WHERE image_url IS DISTINCT FROM favorites_cell_sized(image_url)
                OR item->>'imageURL' IS DISTINCT FROM favorites_cell_sized(item->>'imageURL');
            DROP FUNCTION favorites_cell_sized(text);
            """),
        Migration(15, "written_cards_say_so", sql: """
            -- A favorite is its item, when, and its version (issue #50): whether the user wrote a card is said by the
            -- item itself (card.writtenByUser), which lists serve as stored. Cards written before it did get it
            -- once, here; their events are marked where they are read (FavoriteEvent.decode, StoredChange).
            UPDATE favorites
               SET item = jsonb_set(item::jsonb, '{card,writtenByUser}', 'true')::json
             WHERE written AND json_typeof(item->'card') = 'object' AND item->'card'->'writtenByUser' IS NULL;
            """),
        Migration(16, "gated_stream_lock", sql: EventStoreSchema.gatedLockSQL),
    ]
}
