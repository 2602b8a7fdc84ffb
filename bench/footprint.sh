#!/usr/bin/env bash
# What each service costs to run: time from start to ready, resident memory idle, and resident memory under load
# (its peak while wrk drives its main read route), on a throwaway PostgreSQL 15.
#
#   bench/footprint.sh [--quick] [--seconds 10]        (--quick: 2-second load, the debug build)
#
# Start to ready: from exec until /health/ready first answers 200 (migrations on an empty database included; its
# dependencies already up). Idle: VmRSS two seconds after ready. Load: the highest VmRSS sampled every 200 ms while wrk
# (2 threads, 16 connections) runs, and the process's VmHWM afterwards.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

seconds=10
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2 ;;
        --seconds) seconds="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures

ensure_packages libpq-dev postgresql-15 curl wrk
bench_build auth-service replay-upstream catalog-proxy favorites-service
bin="$BENCH_BIN"
start_bench_postgres

rss_mb() { awk -v field="$2:" '$1 == field { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# Starts a service and waits until it is ready; sets STARTED_MS (milliseconds from start to ready) and STARTED_PID.
# (Not in a command substitution: its subshell would keep the pid from bench_start's list, so the process would
# outlive the script.)
start_timed() { # name port command…
    local name="$1" port="$2" start
    shift 2
    start=$(date +%s%N)
    bench_start "$name" "$@"
    STARTED_PID="${BENCH_PIDS[-1]}"
    for _ in $(seq 1 3000); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/health/ready" 2>/dev/null; then
            STARTED_MS=$((($(date +%s%N) - start) / 1000000))
            return 0
        fi
        sleep 0.01
    done
    cat "$BENCH_WORK/$name.log" >&2
    die "$name did not become ready"
}

# Peak VmRSS while wrk loads url, in MiB.
rss_under_load() { # pid url token
    local pid="$1" peak=0 wrk_pid sample
    wrk -t2 -c16 -d"${seconds}s" -H "Authorization: Bearer $3" "$2" >"$BENCH_WORK/wrk.log" 2>&1 &
    wrk_pid=$!
    while kill -0 "$wrk_pid" 2>/dev/null; do
        sample="$(rss_mb "$pid" VmRSS)"
        peak="$(awk -v a="$peak" -v b="$sample" 'BEGIN { print (b > a) ? b : a }')"
        sleep 0.2
    done
    wait "$wrk_pid" || true
    echo "$peak"
}

replay_port="$(bench_free_port)"; auth_port="$(bench_free_port)"; catalog_port="$(bench_free_port)"
favorites_port="$(bench_free_port)"
common=(DATABASE_URL="$BENCH_PG_URL" LOG_LEVEL=warning)
bench_start replay "$bin/replay-upstream" --port "$replay_port" --fixtures "$fixtures"
bench_start_mail
start_timed auth "$auth_port" env "${common[@]}" DATABASE_SCHEMA=auth HTTP_PORT="$auth_port" BCRYPT_COST=4 \
    "$bin/auth-service"
auth_ms="$STARTED_MS" auth_pid="$STARTED_PID"
start_timed catalog "$catalog_port" env "${common[@]}" DATABASE_SCHEMA=catalog HTTP_PORT="$catalog_port" \
    AUTH_URL="http://127.0.0.1:$auth_port" CATALOG_USER_RATE_PER_SECOND=1000000 \
    TICKETMASTER_URL="http://127.0.0.1:$replay_port" TICKETMASTER_API_KEY=replay \
    RIJKSMUSEUM_SEARCH_URL="http://127.0.0.1:$replay_port" RIJKSMUSEUM_RECORDS_URL="http://127.0.0.1:$replay_port/id" "$bin/catalog-proxy"
catalog_ms="$STARTED_MS" catalog_pid="$STARTED_PID"
start_timed favorites "$favorites_port" env "${common[@]}" DATABASE_SCHEMA=favorites HTTP_PORT="$favorites_port" \
    AUTH_URL="http://127.0.0.1:$auth_port" CATALOG_URL="http://127.0.0.1:$catalog_port" "$bin/favorites-service"
favorites_ms="$STARTED_MS" favorites_pid="$STARTED_PID"
# The pids must be the services themselves (env execs them), or the figures would be another process's.
for pair in "auth-service:$auth_pid" "catalog-proxy:$catalog_pid" "favorites-service:$favorites_pid"; do
    [[ "$(readlink "/proc/${pair#*:}/exe")" == */"${pair%%:*}" ]] || die "pid ${pair#*:} is not ${pair%%:*}"
done

token="$(curl -fsS -X POST "http://127.0.0.1:$auth_port/v1/auth/signup" -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.com","password":"benchmark passphrase","experience":"ticketmaster"}' |
    sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
[[ -n "$token" ]] || die "sign-up failed"
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $token" \
    "http://127.0.0.1:$favorites_port/v1/favorites/ticketmaster/G5diZfkn0B-bh"
sleep 2

printf '%-20s %14s %12s %22s %12s   %s\n' service "start→ready ms" "idle MiB" "under load (peak) MiB" "VmHWM MiB" "load route"
report() { # name start-ms pid url
    local idle load
    idle="$(rss_mb "$3" VmRSS)"
    load="$(rss_under_load "$3" "$4" "$token")"
    printf '%-20s %14s %12s %22s %12s   %s\n' "$1" "$2" "$idle" "$load" "$(rss_mb "$3" VmHWM)" "${4#http://127.0.0.1:*/}"
}
report auth-service "$auth_ms" "$auth_pid" "http://127.0.0.1:$auth_port/v1/auth/me"
report catalog-proxy "$catalog_ms" "$catalog_pid" "http://127.0.0.1:$catalog_port/v1/catalog/ticketmaster/items?q=Chicago&limit=5"
report favorites-service "$favorites_ms" "$favorites_pid" "http://127.0.0.1:$favorites_port/v1/favorites?experience=ticketmaster"
bench_stamp
