#!/usr/bin/env bash
# auth-service (a release build at BCRYPT_COST, default 12; mail limits lifted) under three loads: 1. sign-ins (wrk, 8
# accounts) against the bcrypt limit (cores ÷ one sign-in alone), and GET /v1/auth/me alone and during them; 2. a
# sign-in alone and with hostile sign-ups; 3. password resets with and without an account (bench/tool.py for 2 and 3).
# Nothing asserted but that every reset is answered alike.
#   bench/auth.sh [--quick] [--seconds 15] [--connections 16] [--sign-ins 40] [--hostile 20] [--requests 2000]
#   --quick: 2-second phases, bcrypt cost 10, 10 sign-ins, 200 resets of each kind, the debug build.
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
seconds=15 connections=16 sign_ins=40 hostile=20 requests=2000 cost="${BCRYPT_COST:-12}" password="benchmark passphrase"
bench_options "seconds=2 sign_ins=10 requests=200 cost=${BCRYPT_COST:-10}" "$@"
ensure_packages libpq-dev postgresql-15 curl wrk
bench_build auth-service replay-upstream
start_bench_postgres
bench_back_end
bench_service auth BCRYPT_COST="$cost" MAIL_REQUESTS_PER_EMAIL=100000 MAIL_REQUESTS_PER_CLIENT=1000000
base="${BENCH_URL[auth]}"
python3 bench/tool.py ours-tokens "$base" 50 "$password" "$BENCH_WORK/tokens.txt"  # peer-1 … peer-50

one="$(for _ in $(seq 9); do curl -sS -o /dev/null -w '%{time_total}\n' -X POST "$base/v1/auth/login" \
    -H 'Content-Type: application/json' -d "{\"email\":\"peer-1@example.com\",\"password\":\"$password\"}"; done |
    sort -n | sed -n 5p)"  # seconds, the median of 9 alone
limit="$(python3 -c "print('%.1f' % ($(nproc) / $one))")"
storm=(WRK_WORKLOAD=signin WRK_SIDE=ours WRK_USERS=8 WRK_PASSWORD="$password")
bench_wrk - "$base" "$connections" "$seconds" "${storm[@]}"
read -r signins signins_p99 signins_others _ <<<"$result"
bench_wrk - "$base/v1/auth/me" 4 "$seconds" WRK_TOKEN="$(head -n 1 "$BENCH_WORK/tokens.txt")"
read -r me me_p99 me_others _ <<<"$result"
env WRK_RESULT=/dev/null "${storm[@]}" wrk -t2 -c"$connections" -d"$((seconds + 2))s" -s bench/wrk.lua "$base" >/dev/null &
sleep 1
bench_wrk - "$base/v1/auth/me" 4 "$seconds" WRK_TOKEN="$(head -n 1 "$BENCH_WORK/tokens.txt")"
read -r stormy stormy_p99 stormy_others _ <<<"$result"
wait $!
echo "bcrypt cost $cost: one sign-in alone ${one}s (median of 9), limit $limit/s ($(nproc) cores)"
echo "sign-ins, $connections connections: $signins/s (÷ limit $(ratio "$signins" "$limit")), p99 $signins_p99 ms," \
    "other answers $signins_others"
echo "GET /v1/auth/me, 4 connections: alone $me/s, p99 $me_p99 ms (others $me_others); during the storm $stormy/s," \
    "p99 $stormy_p99 ms (others $stormy_others); p99 ratio $(ratio "$stormy_p99" "$me_p99")"
python3 bench/tool.py hostile "$base" peer-2@example.com "$password" "$sign_ins" "$hostile"
python3 bench/tool.py resets "$base" "$requests" "peer-{}@example.com"
echo "mails delivered meanwhile: $(find "$BENCH_WORK/mail/new" -type f | wc -l)"
bench_stamp
