-- pgbench: the lean reference for a favorite toggle, the same guarantees as the service's statements with none of
-- their decisions, on the same tables (favorites-service's), for users of its own. Each write, in one pipeline:
-- BEGIN; the stream's advisory lock (writers of one stream queue, no other waits); one statement that appends the
-- event with its unique event id at the stream's next version (read once the lock is held; a retry's id conflicts and
-- appends nothing, and then the view is not changed either) and changes the view row; COMMIT. The cell item
-- (:item, ~1.2 KB, with ITEM for its id) is bound once and stored once per event and once per favorite, as json
-- (pgbench -M prepared, its -D values from bench_toggle_values in scripts/lib/bench.sh).
\set u random(1, :users)
\set i random(1, 5)
\set r random(1, 4000000000000000000)
\startpipeline
BEGIN;
SELECT pg_advisory_xact_lock(1163285587, hashtext('user-' || md5('lean-' || :u)::uuid));
WITH input AS (
    SELECT replace(:item, 'ITEM', 'item-' || :i)::json AS item
), appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
    SELECT 'user-' || md5('lean-' || :u)::uuid,
           (SELECT coalesce(max(version), 0) + 1 FROM events WHERE stream_id = 'user-' || md5('lean-' || :u)::uuid),
           md5(:u || '-' || :r)::uuid, 'favorite-added', 2, json_build_object('item', item, 'price', nullif(:price, '')::float8),
           '{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'::json
      FROM input
    ON CONFLICT (event_id) DO NOTHING
    RETURNING version, recorded_at
)
INSERT INTO favorites (user_id, experience, item_id, title, price, local_date, local_time, favorited_at, version,
                       item)
SELECT md5('lean-' || :u)::uuid, 'ticketmaster', 'item-' || :i, :title, nullif(:price, '')::float8,
       nullif(:localDate, ''), nullif(:localTime, ''), recorded_at, version, item
  FROM appended, input
ON CONFLICT (user_id, experience, item_id) DO NOTHING;
COMMIT;
\endpipeline
\set r random(1, 4000000000000000000)
\startpipeline
BEGIN;
SELECT pg_advisory_xact_lock(1163285587, hashtext('user-' || md5('lean-' || :u)::uuid));
WITH appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
    SELECT 'user-' || md5('lean-' || :u)::uuid, coalesce(max(version), 0) + 1, md5(:u || '-' || :r)::uuid,
           'favorite-removed', 1, json_build_object('experience', 'ticketmaster', 'itemId', 'item-' || :i),
           '{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'::json
      FROM events WHERE stream_id = 'user-' || md5('lean-' || :u)::uuid
    ON CONFLICT (event_id) DO NOTHING
    RETURNING version
)
DELETE FROM favorites
 WHERE user_id = md5('lean-' || :u)::uuid AND experience = 'ticketmaster' AND item_id = 'item-' || :i
   AND EXISTS (SELECT FROM appended);
COMMIT;
\endpipeline
