#!/usr/bin/env bash
# Sign-in throughput against the bcrypt limit of this machine, and GET /v1/auth/me latency idle and during a
# sign-in storm. A release build of auth-service on a throwaway PostgreSQL 15, loaded with wrk.
#
#   bench/auth.sh [--quick] [--seconds 15] [--connections 16]     (--quick: 2-second phases, bcrypt cost 10)
#
# The bcrypt limit is cores ÷ the time of one sign-in measured alone (one bcrypt verification plus a few cheap
# queries), so a ratio near 1 means sign-ins are bounded by hashing, not by the service around it. Absolute numbers
# drift on a shared machine; compare the ratios between runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

seconds=15
connections=16
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2; quick_cost=10 ;;
        --seconds) seconds="$2"; shift ;;
        --connections) connections="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
cost="${BCRYPT_COST:-${quick_cost:-12}}"
users=8
password="benchmark passphrase"

ensure_packages libpq-dev postgresql-15 curl wrk

bench_build auth-service
binary="$BENCH_BIN/auth-service"

start_bench_postgres
bench_start_mail
port="$(bench_free_port)"
base="http://127.0.0.1:$port"
bench_start auth env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=auth HTTP_PORT="$port" LOG_LEVEL=warning \
    BCRYPT_COST="$cost" "$binary"
bench_wait_ready "$base/health/ready" "$BENCH_WORK/auth.log"

post_json() { curl -sS -X POST "$base$1" -H 'Content-Type: application/json' -d "$2"; }
for i in $(seq 0 $((users - 1))); do
    post_json /v1/auth/signup "{\"email\":\"bench-$i@example.com\",\"password\":\"$password\",\"experience\":\"ticketmaster\"}" \
        >"$BENCH_WORK/signup-$i.json"
done
token="$(sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p' "$BENCH_WORK/signup-0.json")"
[[ -n "$token" ]] || die "sign-up failed: $(cat "$BENCH_WORK/signup-0.json")"

# One sign-in at a time: the cost of a single verification as the service pays it.
single_seconds=()
for _ in $(seq 1 9); do
    single_seconds+=("$(curl -sS -o /dev/null -w '%{time_total}' -X POST "$base/v1/auth/login" \
        -H 'Content-Type: application/json' -d "{\"email\":\"bench-1@example.com\",\"password\":\"$password\"}")")
done
single_ms="$(awk -v s="$(median "${single_seconds[@]}")" 'BEGIN { printf "%.1f", s * 1000 }')"
limit="$(awk -v c="$(nproc)" -v ms="$single_ms" 'BEGIN { printf "%.1f", c * 1000 / ms }')"

cat >"$BENCH_WORK/signin.lua" <<LUA
local n = 0
request = function()
    n = n + 1
    local body = string.format('{"email":"bench-%d@example.com","password":"$password"}', n % $users)
    return wrk.format("POST", "/v1/auth/login", { ["Content-Type"] = "application/json" }, body)
end
LUA

me() { wrk -t1 -c4 -d"${1}s" --latency -H "Authorization: Bearer $token" "$base/v1/auth/me" | bench_wrk_figures; }

storm() { wrk -t2 -c"$connections" -d"${1}s" --latency -s "$BENCH_WORK/signin.lua" "$base"; }

# 1. Sign-ins alone: how close to the hashing limit the service gets.
read -r signin_rps signin_p99 signin_errors <<<"$(storm "$seconds" | bench_wrk_figures)"
# 2. /me alone, then /me while sign-ins saturate the hashing threads: what the storm costs everyone else.
read -r idle_rps idle_p99 idle_errors <<<"$(me "$seconds")"
storm "$((seconds + 2))" >/dev/null &
storm_pid=$!
sleep 1
read -r storm_me_rps storm_p99 storm_errors <<<"$(me "$seconds")"
wait "$storm_pid"

printf '%-40s %12s\n' "bcrypt cost" "$cost"
printf '%-40s %12s\n' "one sign-in alone (ms, median of 9)" "$single_ms"
printf '%-40s %12s\n' "bcrypt limit (cores / one sign-in, /s)" "$limit"
printf '%-40s %12s   ratio %s   p99 %s ms   non-2xx %s\n' "sign-ins alone (/s, $connections conns)" "$signin_rps" \
    "$(ratio "$signin_rps" "$limit")" "$signin_p99" "$signin_errors"
printf '%-40s %12s   p99 %s ms   non-2xx %s\n' "GET /me idle (/s, 4 conns)" "$idle_rps" "$idle_p99" "$idle_errors"
printf '%-40s %12s   p99 %s ms   non-2xx %s   p99 ratio %s\n' "GET /me during the storm (/s)" "$storm_me_rps" \
    "$storm_p99" "$storm_errors" "$(ratio "$storm_p99" "$idle_p99")"
bench_stamp
