#!/usr/bin/env bash
# favorites-service through an nginx gateway vs pgbench on the same PostgreSQL 15, in one run:
#   - favorite writes (PUT then DELETE of the same item, each one append) vs pgbench running the service's own append
#     transactions statement for statement, and vs raw single-row inserts, at several concurrencies;
#   - the favorites list (GET) vs pgbench running the same two SELECTs;
#   - write p99 after the log has grown by --log-events events (ten million) vs before (some ten thousand).
# Release builds of auth-service (tokens), replay-upstream (recorded catalogs), catalog-proxy (item lookups) and
# favorites-service; wrk with Lua scripts for the authenticated requests.
#
#   bench/favorites.sh [--quick] [--seconds 10] [--concurrency "8 16 32"] [--log-events 10000000]
#                      (--quick: 2-second runs at 16 connections, 20 000 filler events, the debug build)
#
# Absolute numbers drift on a shared machine; the ratios, measured in the same run, are what to compare.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

seconds=10
warmup=3
concurrency_levels="8 16 32"
log_events=10000000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2; warmup=1; concurrency_levels="16"; log_events=20000 ;;
        --seconds) seconds="$2"; shift ;;
        --concurrency) concurrency_levels="$2"; shift ;;
        --log-events) log_events="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures
users=200  # wrk's users (and as many for pgbench): enough that concurrent writes rarely meet on one stream

ensure_packages libpq-dev postgresql-15 curl wrk nginx

bench_build auth-service replay-upstream catalog-proxy favorites-service
bin="$BENCH_BIN"

start_bench_postgres
bench_start_catalog_services "$bin" "$fixtures"
favorites_port="$(bench_free_port)"
bench_start favorites env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=favorites HTTP_PORT="$favorites_port" \
    LOG_LEVEL=warning AUTH_URL="$BENCH_AUTH_URL" CATALOG_URL="$BENCH_CATALOG_URL" "$bin/favorites-service"
bench_wait_ready "http://127.0.0.1:$favorites_port/health/ready" "$BENCH_WORK/favorites.log"

bench_start_favorites_gateway "$favorites_port"
bench_wait_ready "$gateway/v1/favorites/health/live" "$BENCH_NGINX_DIR/error.log"

log_info "signing up $users users"
tokens="$BENCH_WORK/tokens.txt"
bench_sign_up "$users" "$BENCH_AUTH_URL" ticketmaster "$tokens"
items=("${BENCH_FAVORITE_ITEMS[@]}")
bench_favorites_lua "$tokens" "$BENCH_WORK"

load() { # script connections
    wrk -t2 -c"$2" -d"${seconds}s" --latency -s "$BENCH_WORK/$1.lua" "$gateway" | bench_wrk_figures
}

# pgbench's users and their streams, in the service's own tables (the service never reads them).
psql_run() { psql "$BENCH_PG_URL" -v ON_ERROR_STOP=1 -qAt "$@"; }
psql_run <<SQL
SET search_path = favorites;
INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version)
SELECT md5('bench-' || u)::uuid, 'ticketmaster', 'item-' || i, 'Bench item ' || i, 'A venue', NULL, 20 + i, NULL,
       now(), i
  FROM generate_series(1, $users) u, generate_series(1, 5) i;
INSERT INTO event_streams (stream_id, version) SELECT 'bench-' || u, 5 FROM generate_series(1, $users) u;
CREATE TABLE public.bench_writes (id bigserial PRIMARY KEY, worker int NOT NULL, title text NOT NULL,
                                  created_at timestamptz NOT NULL DEFAULT now());
SQL
snapshot='{"experience":"ticketmaster","imageURL":"https://s1.ticketm.net/dam/a/c4c/e751ab33-b9cd-4d24-ad4a-5ef79faa7c4c_1252941_RETINA_PORTRAIT_3_2.jpg","itemId":"ITEM","price":49.5,"subtitle":"Footprint Center, Phoenix","title":"Phoenix Suns vs. Los Angeles Lakers"}'
metadata='{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'
# The statements favorites-service runs for PUT (add) and for DELETE (remove), in the same two round trips: BEGIN and
# the state under the stream's lock (favorites_write_state) in one pipeline; the append with the view's change and
# COMMIT in a second. pgbench cannot carry a result from one pipeline into the next (no \gset in pipeline mode), so
# where the service binds the version it read, the write looks it up again by primary key: a little more database
# work for pgbench. Its sessions get the service's search_path (PGOPTIONS), as the functions resolve names with it.
append_statements() { # view-statement
    cat <<SQL
\\set r random(1, 2000000000)
\\startpipeline
BEGIN;
SELECT * FROM favorites_write_state('bench-' || :u, md5('bench-' || :u)::uuid, 'ticketmaster', 'item-' || :i, NULL,
                                    md5(:u || '-' || :r)::uuid);
\\endpipeline
\\startpipeline
WITH appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata, recorded_at)
    VALUES ('bench-' || :u, coalesce((SELECT version FROM event_streams WHERE stream_id = 'bench-' || :u), 0) + 1,
            md5(:u || '-' || :r)::uuid, 'favorite-added', 1, replace('$snapshot', 'ITEM', 'item-' || :i)::jsonb,
            '$metadata'::jsonb, COALESCE(NULL::timestamptz, now()))
), advanced AS (
    INSERT INTO event_streams AS s (stream_id, version) VALUES ('bench-' || :u, 1)
    ON CONFLICT (stream_id) DO UPDATE SET version = s.version + 1
)
$1
COMMIT;
\\endpipeline
SQL
}
stream_version="(SELECT version FROM event_streams WHERE stream_id = 'bench-' || :u)"
{
    echo "\\set u random(1, $users)"
    echo "\\set i random(1, 5)"
    append_statements "INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version) VALUES (md5('bench-' || :u)::uuid, 'ticketmaster', 'item-' || :i, 'Bench', 'A venue', NULL, 49.5, NULL, now(), $stream_version + 1) ON CONFLICT (user_id, experience, item_id) DO NOTHING;"
    append_statements "DELETE FROM favorites WHERE user_id = md5('bench-' || :u)::uuid AND experience = 'ticketmaster' AND item_id = 'item-' || :i;"
} >"$BENCH_WORK/append.sql"
cat >"$BENCH_WORK/insert.sql" <<'SQL'
\set worker random(0, 63)
INSERT INTO public.bench_writes (worker, title) VALUES (:worker, 'favorite');
SQL
cat >"$BENCH_WORK/list.sql" <<SQL
\\set u random(1, $users)
SELECT version FROM favorites.event_streams WHERE stream_id = 'bench-' || :u;
SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version FROM favorites.favorites
 WHERE user_id = md5('bench-' || :u)::uuid AND experience = 'ticketmaster' AND version < 9223372036854775807
 ORDER BY version DESC LIMIT 51;
SQL
# Transactions per second (each append.sql run is two transactions, as two wrk requests are), and the p99 in ms.
pgbench_run() { # script clients [transactions-per-run]
    local per_run="${3:-1}"
    PGHOST=127.0.0.1 PGPORT=$BENCH_PG_PORT PGUSER=postgres PGOPTIONS="-c search_path=favorites" pgbench -n -M prepared -f "$BENCH_WORK/$1.sql" -c "$2" \
        -j 2 -T "$seconds" postgres 2>/dev/null |
        awk -v per="$per_run" '/^tps = / { printf "%d\n", $3 * per }'
}

log_info "warming up (first requests fill the catalog cache and the connection pools)"
wrk -t2 -c16 -d"${warmup}s" -s "$BENCH_WORK/toggle.lua" "$gateway" >/dev/null

log_info "favorite writes through the gateway vs pgbench (the same transactions) vs raw inserts"
printf '%-44s %12s %10s %8s %10s %10s\n' "favorite writes (PUT/DELETE)" "service rps" "p99 ms" "non-2xx" \
    "pgbench tps" "insert tps"
for c in $concurrency_levels; do
    read -r rps p99 errors <<<"$(load toggle "$c")"
    pg_tps="$(pgbench_run append "$c" 2)"
    insert_tps="$(pgbench_run insert "$c")"
    printf '%-44s %12s %10s %8s %10s %10s   ratio %s (vs inserts %s)\n' "  $c connections" "$rps" "$p99" "$errors" \
        "$pg_tps" "$insert_tps" "$(ratio "$rps" "$pg_tps")" "$(ratio "$rps" "$insert_tps")"
    [[ "$c" == "$(echo "$concurrency_levels" | awk '{ print $NF }')" ]] && small_log_p99="$p99"
done
small_log_events="$(psql_run -c 'SELECT count(*) FROM favorites.events')"

log_info "favorites list through the gateway vs pgbench (the same SELECTs)"
# Every user gets all five favorites (a PUT on an existing favorite writes nothing).
while read -r token; do
    for item in "${items[@]}"; do
        printf -- '-X PUT -H "Authorization: Bearer %s" -o /dev/null %s/v1/favorites/ticketmaster/%s\n' \
            "$token" "$gateway" "$item"
    done
done <"$tokens" | xargs -P 8 -L 1 curl -fsS
for c in $concurrency_levels; do
    read -r rps p99 errors <<<"$(load list "$c")"
    pg_tps="$(pgbench_run list "$c")"
    printf '%-44s %12s %10s %8s %10s   ratio %s\n' "list of 5, $c connections" "$rps" "$p99" "$errors" "$pg_tps" \
        "$(ratio "$rps" "$pg_tps")"
done

log_info "growing the log by $log_events events"
started=$(date +%s)
psql_run <<SQL
SET search_path = favorites;
BEGIN;
-- Ten events per filler stream, of a type no view reads; the projection's checkpoint moves past them with them.
INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
SELECT 'filler-' || (n / 10), n % 10 + 1, gen_random_uuid(), 'bench-filler', 1,
       replace('$snapshot', 'ITEM', 'filler-' || n)::jsonb, '$metadata'::jsonb
  FROM generate_series(0, $log_events - 1) n;
INSERT INTO event_streams (stream_id, version) SELECT 'filler-' || s, 10 FROM generate_series(0, ($log_events - 1) / 10) s
ON CONFLICT DO NOTHING;
INSERT INTO projection_checkpoints (projection, transaction_id, position)
SELECT 'popular', pg_current_xact_id(), max(position) FROM events
ON CONFLICT (projection) DO UPDATE SET transaction_id = excluded.transaction_id, position = excluded.position;
COMMIT;
-- Settle what the load left behind, so the measurement does not meet it: autovacuum would otherwise visit both tables,
-- and the checkpointer write ten million rows' worth of dirty pages, during the next run (one run measured 6.4x).
VACUUM ANALYZE events;
VACUUM ANALYZE event_streams;
CHECKPOINT;
SQL
total_events="$(psql_run -c 'SELECT count(*) FROM favorites.events')"
log_info "loaded in $(($(date +%s) - started)) s; the log holds $total_events events"
c="$(echo "$concurrency_levels" | awk '{ print $NF }')"
read -r rps p99 errors <<<"$(load toggle "$c")"
printf '%-44s %12s %10s %8s\n' "writes, $total_events-event log, $c conn." "$rps" "$p99" "$errors"
printf '%-44s %12s   (%s events vs %s)\n' "p99 ratio large log / small log" "$(ratio "$p99" "$small_log_p99")" \
    "$total_events" "$small_log_events"
bench_stamp
