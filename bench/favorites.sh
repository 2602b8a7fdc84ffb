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

psql_run() { psql "$BENCH_PG_URL" -v ON_ERROR_STOP=1 -qAt "$@"; }
bench_pgbench_toggles "$users" "$BENCH_WORK/append.sql"
psql_run -c "CREATE TABLE public.bench_writes (id bigserial PRIMARY KEY, worker int NOT NULL, title text NOT NULL,
                                               created_at timestamptz NOT NULL DEFAULT now())"
cat >"$BENCH_WORK/insert.sql" <<'SQL'
\set worker random(0, 63)
INSERT INTO public.bench_writes (worker, title) VALUES (:worker, 'favorite');
SQL
cat >"$BENCH_WORK/list.sql" <<SQL
\\set u random(1, $users)
SELECT coalesce(max(version), 0) FROM favorites.events WHERE stream_id = 'bench-' || :u;
SELECT experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version FROM favorites.favorites
 WHERE user_id = md5('bench-' || :u)::uuid AND experience = 'ticketmaster' AND version < 9223372036854775807
 ORDER BY version DESC LIMIT 51;
SQL
# Transactions per second (each append.sql run is two transactions, as two wrk requests are).
pgbench_run() { # script clients [transactions-per-run]
    bench_pgbench "$BENCH_WORK/$1.sql" "$2" "$seconds" | awk -v per="${3:-1}" '{ printf "%d\n", $1 * per }'
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
       replace('$BENCH_EVENT_DATA', 'ITEM', 'filler-' || n)::json, '$BENCH_EVENT_METADATA'::json
  FROM generate_series(0, $log_events - 1) n;
INSERT INTO projection_checkpoints (projection, transaction_id, position)
SELECT 'popular', pg_current_xact_id(), max(position) FROM events
ON CONFLICT (projection) DO UPDATE SET transaction_id = excluded.transaction_id, position = excluded.position;
COMMIT;
-- Settle what the load left behind, so the measurement does not meet it: autovacuum would otherwise visit the log,
-- and the checkpointer write ten million rows' worth of dirty pages, during the next run (one run measured 6.4x).
VACUUM ANALYZE events;
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
