#!/usr/bin/env bash
# What each service costs to run, release builds on a throwaway PostgreSQL 15 with empty schemas, started in
# dependency order: time from exec to the first 200 of /health/ready (migrations included), resident memory (VmRSS)
# two seconds after a first request, its peak (sampled every 200 ms) while wrk (2 threads, 16 connections) drives the
# service's main read route, and VmHWM afterwards.
#
#   bench/footprint.sh [--quick] [--seconds 10]        (--quick: 2-second load, the debug build)
set -euo pipefail
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"

seconds=10
bench_options "seconds=2" "$@"
ensure_packages libpq-dev postgresql-15 curl wrk
bench_build auth-service replay-upstream catalog-proxy favorites-service
start_bench_postgres
bench_back_end auth catalog favorites
token="$(bench_token "${BENCH_URL[auth]}" ticketmaster)"
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $token" "${BENCH_URL[favorites]}/v1/favorites/ticketmaster/G5diZfkn0B-bh"
sleep 2

rss() { awk -v field="$2:" '$1 == field { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }  # pid field: MiB
printf '%-18s %14s %9s %16s %10s   %s\n' service "start→ready ms" "idle MiB" "peak load MiB" "VmHWM MiB" route
for row in "auth-service auth /v1/auth/me" \
    "catalog-proxy catalog /v1/catalog/ticketmaster/items?q=Chicago&limit=5" \
    "favorites-service favorites /v1/favorites?experience=ticketmaster"; do
    read -r service name route <<<"$row"
    pid="${BENCH_PID_OF[$name]}"
    [[ "$(readlink "/proc/$pid/exe")" == */"$service" ]] || die "pid $pid is not $service"
    idle="$(rss "$pid" VmRSS)" peak=0
    wrk -t2 -c16 -d"${seconds}s" -H "Authorization: Bearer $token" "${BENCH_URL[$name]}$route" >/dev/null &
    while kill -0 $! 2>/dev/null; do
        peak="$(awk -v a="$peak" -v b="$(rss "$pid" VmRSS)" 'BEGIN { print (b > a) ? b : a }')"
        sleep 0.2
    done
    printf '%-18s %14s %9s %16s %10s   %s\n' "$service" "${BENCH_READY_MS[$name]}" "$idle" "$peak" "$(rss "$pid" VmHWM)" "$route"
done
bench_stamp
