#!/usr/bin/env bash
# Live updates beside PocketBase's realtime API, with one client (bench/streams/streams.py, which says what it
# measures): ours on two favorites-service replicas (release builds; each holds half the streams and takes every other
# write, so half the events cross replicas), PocketBase one process; streams opened directly on the services.
#   bench/streams.sh [--quick] [--users 1000] [--devices "1 10"] [--writes 1000]
#   --quick: 20 users, one device each, 40 writes, the debug build: a smoke check, not figures.
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
users=1000 devices="1 10" writes=1000 password="benchmark passphrase"
bench_options "users=20 devices=1 writes=40" "$@"
ensure_packages libpq-dev postgresql-15 curl python3-venv
bench_build auth-service replay-upstream catalog-proxy favorites-service
ulimit -n "$(ulimit -Hn)"  # every stream is a descriptor here and one in the server: room for 2 × 10 000 and more
start_bench_postgres
bench_back_end auth catalog
for replica in 1 2; do bench_service "favorites-$replica" FAVORITES_STREAMS_MAX=20000; done
bench_start_pocketbase "$password"
log_info "signing up $users users on each side"
python3 bench/tool.py ours-tokens "${BENCH_URL[auth]}" "$users" "$password" "$BENCH_WORK/tokens-ours.txt"
python3 bench/tool.py pocketbase-tokens "${BENCH_URL[pocketbase]}" "$users" "$password" \
    "$BENCH_WORK/tokens-pocketbase.txt"
echo "$users users, $writes writes (100/s), ours: 2 favorites-service replicas, PocketBase $POCKETBASE_VERSION"
printf '%-11s %8s %9s %9s %9s %12s %11s %14s\n' side streams "p50 ms" "p99 ms" "max ms" lost/events unexpected \
    "KiB per stream"
python3 bench/streams/streams.py ours "${BENCH_URL[favorites-1]},${BENCH_URL[favorites-2]}" "$BENCH_WORK/tokens-ours.txt" \
    "$devices" "$writes" "${BENCH_PID_OF[favorites-1]},${BENCH_PID_OF[favorites-2]}"
python3 bench/streams/streams.py pocketbase "${BENCH_URL[pocketbase]}" "$BENCH_WORK/tokens-pocketbase.txt" "$devices" \
    "$writes" "${BENCH_PID_OF[pocketbase]}"
bench_stamp
