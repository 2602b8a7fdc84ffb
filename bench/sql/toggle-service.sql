-- pgbench: favorites-service's own statements for a favorite toggle, rendered from FavoritesWriteStatements by
-- Tests/FavoritesServiceTests/BenchStatementsTests.swift (which fails when this file differs): a keyed favorite
-- (its first, uncounted send), then a keyed unfavorite, each in the writer's one pipeline. The values the
-- service binds are bound here too (pgbench -M prepared; -D values from bench/tool.py's toggle_values).
\set u random(1, :users)
\set i random(1, 5)
\set r random(1, 4000000000000000000)
\startpipeline
BEGIN;
WITH gate AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(1398230870, 0))
SELECT pg_advisory_xact_lock(1163285587, hashtext(('user-' || md5('bench-' || :u)::uuid)::text)) FROM gate;
WITH decision AS MATERIALIZED (
    SELECT CASE
               WHEN earlier.event_id IS NOT NULL THEN 'retry'
               WHEN kept.item_id IS NULL AND head.version >= '5000'::integer THEN 'count-first'
               WHEN kept.item_id IS NOT NULL AND 't'::boolean THEN 'confirmed'
               WHEN kept.item_id IS NOT NULL THEN 'existing'
               ELSE 'added'
           END AS outcome,
           NULL::text AS title_holder,
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
             WHERE stream_id = ('user-' || md5('bench-' || :u)::uuid)::text) AS head
      LEFT JOIN events AS earlier
             ON 't'::boolean AND earlier.event_id = md5(:u || '-' || :r)::uuid
                AND earlier.stream_id = ('user-' || md5('bench-' || :u)::uuid)::text
      LEFT JOIN favorites AS kept
             ON kept.user_id = md5('bench-' || :u)::uuid AND kept.experience = 'ticketmaster'::text
                AND kept.item_id = ('item-' || :i)::text
), appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata,
                        recorded_at)
    SELECT ('user-' || md5('bench-' || :u)::uuid)::text, next_version, md5(:u || '-' || :r)::uuid,
           CASE outcome WHEN 'added' THEN 'favorite-added'::text ELSE 'favorite-confirmed'::text END, 1,
           CASE outcome WHEN 'added' THEN replace(:snapshot, 'ITEM', 'item-' || :i)::json ELSE kept_favorite END,
           '{"actor":"00000000-0000-4000-8000-00000000b0b0","requestID":"00000000-0000-0000-0000-000000000000"}'::json, now()::timestamptz
      FROM decision WHERE outcome IN ('added', 'confirmed')
), viewed AS (
    INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating,
                           local_date, local_time, rank, facts, written, favorited_at, version, item)
    SELECT md5('bench-' || :u)::uuid, 'ticketmaster'::text, ('item-' || :i)::text, :title::text,
           nullif(:subtitle, '')::text, nullif(:imageURL, '')::text, nullif(:price, '')::float8,
           NULL::float8, nullif(:localDate, '')::text, nullif(:localTime, '')::text,
           NULL::integer, NULL::jsonb, 'f'::boolean,
           now()::timestamptz, next_version, replace(:item, 'ITEM', 'item-' || :i)::json
      FROM decision WHERE outcome = 'added'
)
SELECT outcome, title_holder, kept_favorite::text AS kept_favorite, event_type, schema_version,
       earlier_data, recorded_at, earlier_version, next_version
  FROM decision;
COMMIT;
\endpipeline
\set r random(1, 4000000000000000000)
\startpipeline
BEGIN;
WITH gate AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(1398230870, 0))
SELECT pg_advisory_xact_lock(1163285587, hashtext(('user-' || md5('bench-' || :u)::uuid)::text)) FROM gate;
WITH appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata,
                        recorded_at)
    SELECT ('user-' || md5('bench-' || :u)::uuid)::text, coalesce(max(version), 0) + 1, md5(:u || '-' || :r)::uuid, 'favorite-removed'::text, 1,
           json_build_object('experience', 'ticketmaster'::text, 'itemId', ('item-' || :i)::text), '{"actor":"00000000-0000-4000-8000-00000000b0b0","requestID":"00000000-0000-0000-0000-000000000000"}'::json, now()::timestamptz
      FROM events WHERE stream_id = ('user-' || md5('bench-' || :u)::uuid)::text
    ON CONFLICT (event_id) DO NOTHING  -- the request's event is in the log already: a retry
    RETURNING version
), removed AS (
    DELETE FROM favorites WHERE user_id = md5('bench-' || :u)::uuid AND experience = 'ticketmaster'::text AND item_id = ('item-' || :i)::text AND EXISTS (SELECT FROM appended) RETURNING item_id
)
SELECT CASE WHEN NOT EXISTS (SELECT FROM appended) THEN 'retry'
            WHEN EXISTS (SELECT FROM removed) THEN 'removed'
            ELSE 'recorded' END AS outcome;
COMMIT;
\endpipeline
