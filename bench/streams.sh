#!/usr/bin/env bash
# Live updates beside PocketBase's realtime API, on this machine, in one run, with the same client
# (bench/streams/streams.py): N open streams (USERS users, each with N/USERS devices), writes by those users (a
# favorite, then its removal, 100 a second), and for every write the time from its answer to its event on each of the
# user's streams (p50, p99, max), the events lost, and the resident memory each side spends per open stream.
#   Ours: two favorites-service replicas (release builds) on one PostgreSQL 15 (`synchronous_commit=off`), each
#   holding half the streams; writes alternate between them, so half the events cross from one replica to the other.
#   PocketBase: one process, its realtime API (`/api/realtime`, a subscription to `favorites` per stream, with the
#   user's token; its list rule shows each user their own records).
# The streams are opened directly on the services (the gateway adds a hop per event for both and two descriptors per
# stream; the stack's gateway allows 20 480 connections per worker). Nothing asserted.
#
#   bench/streams.sh [--quick] [--users 1000] [--devices "1 10"] [--writes 1000]
#   --quick: 20 users, one device each, 40 writes, the debug build: a smoke check, not figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

users=1000
device_levels="1 10"
writes=1000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; users=20; device_levels=1; writes=40 ;;
        --users) users="$2"; shift ;;
        --devices) device_levels="$2"; shift ;;
        --writes) writes="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures
password="benchmark passphrase"
ensure_packages libpq-dev postgresql-15 curl python3-venv
install_pocketbase
bench_build auth-service replay-upstream catalog-proxy favorites-service
# Every stream is a descriptor here and one in the server: room for 2 × 10 000 and then some.
ulimit -n "$(ulimit -Hn)"

start_bench_postgres
bench_start_catalog_services "$BENCH_BIN" "$fixtures"
replicas=()
for replica in 1 2; do
    port="$(bench_free_port)"
    bench_start "favorites-$replica" env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=favorites HTTP_PORT="$port" \
        LOG_LEVEL=warning AUTH_URL="$BENCH_AUTH_URL" CATALOG_URL="$BENCH_CATALOG_URL" FAVORITES_STREAMS_MAX=20000 \
        "$BENCH_BIN/favorites-service"
    bench_wait_ready "http://127.0.0.1:$port/health/ready" "$BENCH_WORK/favorites-$replica.log"
    replicas+=("http://127.0.0.1:$port")
done
bench_start_pocketbase "$password"

log_info "signing up $users users on each side"
python3 bench/peers/setup.py ours-tokens "$BENCH_AUTH_URL" "$users" "$password" "$BENCH_WORK/tokens-ours.txt"
python3 bench/peers/setup.py pocketbase-tokens "$pocketbase_url" "$users" "$password" "$BENCH_WORK/tokens-pocketbase.txt"

ours_pids="${BENCH_PID_OF[favorites-1]},${BENCH_PID_OF[favorites-2]}"
echo
bench_stamp
echo "users=$users writes=$writes (100/s) synchronous_commit=off ours=2 favorites-service replicas pocketbase=$POCKETBASE_VERSION"
printf '%-11s %8s %9s %9s %9s %12s %11s %14s\n' side streams "p50 ms" "p99 ms" "max ms" "lost/events" unexpected \
    "KiB per stream"
for devices in $device_levels; do
    for side in ours pocketbase; do
        if [[ "$side" == ours ]]; then
            urls="$(IFS=,; echo "${replicas[*]}")" tokens="$BENCH_WORK/tokens-ours.txt" pids="$ours_pids"
        else
            urls="$pocketbase_url" tokens="$BENCH_WORK/tokens-pocketbase.txt" pids="${BENCH_PID_OF[pocketbase]}"
        fi
        log_info "$side: $((users * devices)) streams"
        python3 bench/streams/streams.py "$side" "$urls" "$tokens" "$devices" "$writes" "$pids" |
            python3 -c 'import json, sys
r = json.load(sys.stdin)
print("%-11s %8d %9s %9s %9s %12s %11d %14.1f" % (r["side"], r["streams"], r["p50_ms"], r["p99_ms"], r["max_ms"],
      "%d/%d" % (r["events_lost"], r["events_expected"]), r["events_unexpected"], r["kib_per_stream"]))'
    done
done
