-- bench/projection.sh's log: ten events per user (:users users), as favorites-service writes them: seven items
-- favorited, then three of them unfavorited, so that each rebuilt view holds four favorites per user.
SET search_path = favorites;
INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
SELECT 'user-' || md5('bench-' || u)::uuid, v, gen_random_uuid(),
       CASE WHEN v <= 7 THEN 'favorite-added' ELSE 'favorite-removed' END, 1,
       json_build_object('experience', 'ticketmaster', 'itemId', 'item-' || (v - 1) % 7, 'title',
                         CASE WHEN v <= 7 THEN 'Phoenix Suns vs. Los Angeles Lakers' END, 'price',
                         CASE WHEN v <= 7 THEN 49.5 END, 'subtitle', CASE WHEN v <= 7 THEN 'Footprint Center' END),
       '{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'
  FROM generate_series(1, :users) u, generate_series(1, 10) v
 ORDER BY u, v;
VACUUM ANALYZE events;
