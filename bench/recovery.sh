#!/usr/bin/env bash
# Whether a password reset request tells which addresses have accounts: the latency of requests for addresses with an
# account and without one, interleaved at random, side by side (and every answer compared byte for byte). A release
# build of auth-service on a throwaway PostgreSQL 15, delivering to the project's real SMTP server meanwhile, as it
# would in production (the sender works in the background on every replica).
#
#   bench/recovery.sh [--quick] [--requests 2000]
#
# The figures: p50/p90/p99/mean per kind, the difference of the medians and the Kolmogorov-Smirnov distance between
# the two distributions (0: indistinguishable; near 1: told apart by a single request).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

requests=2000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; requests=200 ;;
        --requests) requests="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done

ensure_packages libpq-dev postgresql-15 curl
bench_build auth-service
start_bench_postgres

bench_start_mail
port="$(bench_free_port)"
base="http://127.0.0.1:$port"
# Limits lifted: the benchmark is one client asking many times; the limits have their own tests.
bench_start auth env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=auth HTTP_PORT="$port" LOG_LEVEL=warning \
    BCRYPT_COST=4 MAIL_REQUESTS_PER_EMAIL=100000 MAIL_REQUESTS_PER_CLIENT=1000000 \
    "$BENCH_BIN/auth-service"
bench_wait_ready "$base/health/ready" "$BENCH_WORK/auth.log"

for i in $(seq 0 49); do
    curl -fsS -o /dev/null -X POST "$base/v1/auth/signup" -H 'Content-Type: application/json' \
        -d "{\"email\":\"member-$i@example.com\",\"password\":\"benchmark passphrase\",\"experience\":\"mobiles\"}" \
        || die "sign-up failed"
done

python3 bench/recovery/timing.py "$base" "$requests" "member-{}@example.com"
printf '%-28s %6s\n' "mails delivered meanwhile" "$(find "$BENCH_WORK/mail/new" -type f | wc -l)"
bench_stamp
