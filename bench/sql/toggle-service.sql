-- pgbench: favorites-service's own statements for a favorite toggle (FavoritesWriteStatements: favorite, then
-- unfavorite, both keyed, as the client library and bench/wrk.lua send them), each write in the one pipeline the
-- service sends: BEGIN, the view's table lock, the stream's advisory lock, the statement, COMMIT. What the service
-- binds is bound here too (pgbench -M prepared, its -D values from bench_toggle_values in scripts/lib/bench.sh): the
-- cell item's snapshot (:snapshot, :item, with ITEM for the item's id) and its fields; written in: the user's stream,
-- a new event id (:r), no title to keep free (not a card), the limit of 5000 uncounted (the service's first send).
\set u random(1, :users)
\set i random(1, 5)
\set r random(1, 4000000000000000000)
\startpipeline
BEGIN;
LOCK TABLE favorites IN ROW EXCLUSIVE MODE;
SELECT pg_advisory_xact_lock(1163285587, hashtext('user-' || md5('bench-' || :u)::uuid));
WITH decision AS MATERIALIZED (
    SELECT CASE
               WHEN earlier.event_id IS NOT NULL THEN 'retry'
               WHEN kept.item_id IS NULL AND head.version >= 5000::integer AND NOT false THEN 'count-first'
               WHEN kept.item_id IS NULL AND head.version >= 5000::integer
                    AND EXISTS (SELECT FROM favorites WHERE user_id = md5('bench-' || :u)::uuid
                                   AND experience = 'ticketmaster' OFFSET 5000 - 1) THEN 'limit-reached'
               WHEN holder.title IS NOT NULL THEN 'title-taken'
               WHEN kept.item_id IS NOT NULL AND true THEN 'confirmed'
               WHEN kept.item_id IS NOT NULL THEN 'existing'
               ELSE 'added'
           END AS outcome,
           holder.title AS title_holder,
           head.version + 1 AS next_version,
           CASE WHEN kept.item_id IS NOT NULL THEN json_build_object(
               'favorite', json_build_object(
                   'experience', kept.experience, 'itemId', kept.item_id, 'title', kept.title,
                   'subtitle', kept.subtitle, 'imageURL', kept.image_url, 'price', kept.price,
                   'rating', kept.rating, 'localDate', kept.local_date, 'localTime', kept.local_time,
                   'rank', kept.rank, 'facts', kept.facts, 'written', kept.written, 'item', kept.item),
               'favoritedAt', extract(epoch FROM kept.favorited_at)) END AS kept_favorite,
           earlier.event_type, earlier.schema_version, earlier.data::text AS earlier_data, earlier.recorded_at
      FROM (SELECT coalesce(max(version), 0) AS version FROM events
             WHERE stream_id = 'user-' || md5('bench-' || :u)::uuid) AS head
      LEFT JOIN events AS earlier
             ON true AND earlier.event_id = md5(:u || '-' || :r)::uuid
                AND earlier.stream_id = 'user-' || md5('bench-' || :u)::uuid
      LEFT JOIN favorites AS kept
             ON kept.user_id = md5('bench-' || :u)::uuid AND kept.experience = 'ticketmaster'
                AND kept.item_id = 'item-' || :i
      LEFT JOIN LATERAL (
          SELECT title FROM favorites AS other
           WHERE NULL::text IS NOT NULL AND other.user_id = md5('bench-' || :u)::uuid
             AND other.experience = 'ticketmaster' AND other.item_id <> 'item-' || :i
             AND lower(normalize(btrim(other.title), NFC)) = lower(normalize(btrim(NULL::text), NFC))
           LIMIT 1) AS holder ON true
), appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata, recorded_at)
    SELECT 'user-' || md5('bench-' || :u)::uuid, next_version, md5(:u || '-' || :r)::uuid,
           CASE outcome WHEN 'added' THEN 'favorite-added' ELSE 'favorite-confirmed' END, 1,
           CASE outcome WHEN 'added' THEN replace(:snapshot, 'ITEM', 'item-' || :i)::json ELSE kept_favorite END,
           '{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'::json,
           now()
      FROM decision WHERE outcome IN ('added', 'confirmed')
), viewed AS (
    INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating,
                           local_date, local_time, rank, facts, written, favorited_at, version, item)
    SELECT md5('bench-' || :u)::uuid, 'ticketmaster', 'item-' || :i, :title::text, nullif(:subtitle, '')::text,
           nullif(:imageURL, '')::text, nullif(:price, '')::float8, NULL::float8, nullif(:localDate, '')::text,
           nullif(:localTime, '')::text, NULL::integer, NULL::jsonb, false, now(), next_version,
           replace(:item, 'ITEM', 'item-' || :i)::json
      FROM decision WHERE outcome = 'added'
)
SELECT outcome, title_holder, kept_favorite::text, event_type, schema_version, earlier_data, recorded_at
  FROM decision;
COMMIT;
\endpipeline
\set r random(1, 4000000000000000000)
\startpipeline
BEGIN;
LOCK TABLE favorites IN ROW EXCLUSIVE MODE;
SELECT pg_advisory_xact_lock(1163285587, hashtext('user-' || md5('bench-' || :u)::uuid));
WITH appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata, recorded_at)
    SELECT 'user-' || md5('bench-' || :u)::uuid, coalesce(max(version), 0) + 1, md5(:u || '-' || :r)::uuid,
           'favorite-removed', 1, json_build_object('experience', 'ticketmaster'::text, 'itemId', ('item-' || :i)::text),
           '{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'::json,
           now()
      FROM events WHERE stream_id = 'user-' || md5('bench-' || :u)::uuid
    ON CONFLICT (event_id) DO NOTHING
    RETURNING version
), removed AS (
    DELETE FROM favorites
     WHERE user_id = md5('bench-' || :u)::uuid AND experience = 'ticketmaster' AND item_id = 'item-' || :i
       AND EXISTS (SELECT FROM appended) RETURNING item_id
)
SELECT CASE WHEN NOT EXISTS (SELECT FROM appended) THEN 'retry'
            WHEN EXISTS (SELECT FROM removed) THEN 'removed'
            ELSE 'recorded' END;
COMMIT;
\endpipeline
