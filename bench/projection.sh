#!/usr/bin/env bash
# Rebuilding views from the event log: events per second of `favorites-service rebuild favorites` (the per-user view)
# and `rebuild popular` (the async "most favorited" projection) on a generated log, against one sequential scan that
# reads every event's data (the database's own limit for reading the log), on the same throwaway PostgreSQL 15.
#
#   bench/projection.sh [--quick] [--events 1000000]        (--quick: 20 000 events, the debug build)
#
# The log: ten events per user (seven items favorited, then three of them unfavorited), as favorites-service writes
# them, so a rebuilt view holds four favorites per user.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

events=1000000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; events=20000 ;;
        --events) events="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
[[ "$events" =~ ^[1-9][0-9]*0$ ]] || die "--events must be a multiple of ten"
bench_fixtures
users=$((events / 10))

ensure_packages libpq-dev postgresql-15 curl
bench_build auth-service replay-upstream catalog-proxy favorites-service
bin="$BENCH_BIN"
start_bench_postgres
# The services create their schemas; favorites-service is stopped again before the log is generated.
bench_start_catalog_services "$bin" "$fixtures"
favorites_port="$(bench_free_port)"
favorites_env=(DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=favorites LOG_LEVEL=warning)
bench_start favorites env "${favorites_env[@]}" HTTP_PORT="$favorites_port" AUTH_URL="$BENCH_AUTH_URL" \
    CATALOG_URL="$BENCH_CATALOG_URL" "$bin/favorites-service"
bench_wait_ready "http://127.0.0.1:$favorites_port/health/ready" "$BENCH_WORK/favorites.log"
kill "${BENCH_PIDS[-1]}"
wait "${BENCH_PIDS[-1]}" 2>/dev/null || true

psql_run() { psql "$BENCH_PG_URL" -v ON_ERROR_STOP=1 -qAt "$@"; }
log_info "generating $events events for $users users"
snapshot='{"experience":"ticketmaster","imageURL":"https://s1.ticketm.net/dam/a/c4c/e751ab33-b9cd-4d24-ad4a-5ef79faa7c4c_1252941_RETINA_PORTRAIT_3_2.jpg","itemId":"ITEM","price":49.5,"subtitle":"Footprint Center, Phoenix","title":"Phoenix Suns vs. Los Angeles Lakers"}'
metadata='{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'
started=$(date +%s)
psql_run <<SQL
SET search_path = favorites;
INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
SELECT 'user-' || md5('bench-' || u)::uuid, v, gen_random_uuid(),
       CASE WHEN v <= 7 THEN 'favorite-added' ELSE 'favorite-removed' END, 1,
       CASE WHEN v <= 7 THEN replace('$snapshot', 'ITEM', 'item-' || (v - 1))::json
            ELSE json_build_object('experience', 'ticketmaster', 'itemId', 'item-' || (v - 8)) END,
       '$metadata'::json
  FROM generate_series(1, $users) u, generate_series(1, 10) v
 ORDER BY u, v;
VACUUM ANALYZE events;
SQL
log_info "generated in $(($(date +%s) - started)) s"

# Milliseconds a command takes.
elapsed_ms() {
    local start end
    start=$(date +%s%N)
    "$@" >"$BENCH_WORK/last.log" 2>&1 || { cat "$BENCH_WORK/last.log" >&2; die "$* failed"; }
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
}
rate() { awk -v n="$events" -v ms="$1" 'BEGIN { printf "%.0f", n * 1000 / ms }'; }

scan_ms="$(elapsed_ms psql_run -c 'SELECT count(*), sum(length(data::text) + length(metadata::text)) FROM favorites.events')"
favorites_ms="$(elapsed_ms env "${favorites_env[@]}" "$bin/favorites-service" rebuild favorites)"
rows="$(psql_run -c 'SELECT count(*) FROM favorites.favorites')"
popular_ms="$(elapsed_ms env "${favorites_env[@]}" "$bin/favorites-service" rebuild popular)"
members="$(psql_run -c 'SELECT count(*) FROM favorites.popular_members')"
[[ "$rows" -eq $((users * 4)) && "$members" -eq $((users * 4)) ]] ||
    die "the rebuilt views hold $rows favorites and $members members, not $((users * 4))"

printf 'log of %s events (%s users), rebuilt views hold %s favorites each\n' "$events" "$users" "$rows"
printf '%-40s %10s ms %12s events/s\n' "one scan reading every event" "$scan_ms" "$(rate "$scan_ms")"
printf '%-40s %10s ms %12s events/s   ratio %s\n' "rebuild favorites (per-user view)" "$favorites_ms" \
    "$(rate "$favorites_ms")" "$(ratio "$(rate "$favorites_ms")" "$(rate "$scan_ms")")"
printf '%-40s %10s ms %12s events/s   ratio %s\n' "rebuild popular (async projection)" "$popular_ms" \
    "$(rate "$popular_ms")" "$(ratio "$(rate "$popular_ms")" "$(rate "$scan_ms")")"
bench_stamp
