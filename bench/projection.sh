#!/usr/bin/env bash
# Rebuilding views from the event log: events per second of `favorites-service rebuild favorites` (the per-user view)
# and `rebuild popular` (the async "most favorited" projection) on a generated log, against one sequential scan that
# reads every event's data (the database's own limit for reading the log), on the same throwaway PostgreSQL 15. The
# log: ten events per user (seven items favorited, then three of them unfavorited), so each view holds four per user.
#
#   bench/projection.sh [--quick] [--events 1000000]        (--quick: 20 000 events, the debug build)
set -euo pipefail
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"

events=1000000
bench_options "events=20000" "$@"
[[ "$events" =~ ^[1-9][0-9]*0$ ]] || die "--events must be a multiple of ten"
users=$((events / 10))
ensure_packages libpq-dev postgresql-15 curl
bench_build auth-service replay-upstream catalog-proxy favorites-service
start_bench_postgres
bench_back_end auth catalog favorites  # favorites-service makes its schema, then stops
kill "${BENCH_PID_OF[favorites]}"
log_info "generating $events events for $users users"
bench_psql <<SQL
SET search_path = favorites;
INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
SELECT 'user-' || md5('bench-' || u)::uuid, v, gen_random_uuid(),
       CASE WHEN v <= 7 THEN 'favorite-added' ELSE 'favorite-removed' END, 1,
       CASE WHEN v <= 7 THEN json_build_object('experience', 'ticketmaster', 'itemId', 'item-' || (v - 1),
                                               'title', 'Phoenix Suns vs. Los Angeles Lakers', 'price', 49.5,
                                               'subtitle', 'Footprint Center, Phoenix', 'imageURL',
                                               'https://s1.ticketm.net/dam/a/c4c/e751ab33_RETINA_PORTRAIT_3_2.jpg')
            ELSE json_build_object('experience', 'ticketmaster', 'itemId', 'item-' || (v - 8)) END,
       '{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'
  FROM generate_series(1, $users) u, generate_series(1, 10) v
 ORDER BY u, v;
VACUUM ANALYZE events;
SQL

timed() { # label command…: prints "label ms events/s"
    local label="$1" started
    shift
    started=$(date +%s%N)
    "$@" >"$BENCH_WORK/timed.log" 2>&1 || { cat "$BENCH_WORK/timed.log" >&2; die "$label failed"; }
    python3 -c 'import sys; ms = (int(sys.argv[2]) - int(sys.argv[1])) / 1e6
print("%-36s %10.0f ms %12.0f events/s" % (sys.argv[3], ms, int(sys.argv[4]) * 1000 / ms))' \
        "$started" "$(date +%s%N)" "$label" "$events" | tee -a "$BENCH_WORK/timed.txt"
}
rebuild=(env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=favorites LOG_LEVEL=warning "$BENCH_BIN/favorites-service" rebuild)
echo "log of $events events ($users users)"
timed "one scan reading every event" bench_psql -c 'SELECT count(*), sum(length(data::text) + length(metadata::text))
    FROM favorites.events'
timed "rebuild favorites (per-user view)" "${rebuild[@]}" favorites
timed "rebuild popular (async projection)" "${rebuild[@]}" popular
rows="$(bench_psql -c 'SELECT count(*) FROM favorites.favorites UNION ALL SELECT count(*) FROM favorites.popular_members' |
    paste -sd' ')"
[[ "$rows" == "$((users * 4)) $((users * 4))" ]] || die "the rebuilt views hold $rows rows, not $((users * 4)) each"
awk '{ rate[NR] = $(NF - 1) } END { printf "ratio to the scan: favorites %.2f, popular %.2f\n", rate[2] / rate[1],
    rate[3] / rate[1] }' "$BENCH_WORK/timed.txt"
bench_stamp
