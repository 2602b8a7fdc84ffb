#!/usr/bin/env bash
# Whether hostile requests slow other people's sign-ins (issue #51): one client signs in, one sign-in at a time, first
# alone, then each sign-in sent together with 20 hostile sign-ups of the largest allowed size (auth-service's 64 KiB
# body: a 254-byte address, a 256-character, 1024-byte password, the rest JSON whitespace), each from an address of
# its own, so no per-client limit helps and only the hashing line does. An auth-service on a throwaway PostgreSQL 15,
# with real bcrypt cost (BCRYPT_COST, default 12).
#
#   bench/abuse.sh [--quick] [--sign-ins 40]      (--quick: the debug build)
#
# The figures: sign-in p50 and p99 (nearest rank) alone and under attack, their ratio, and what the hostile requests
# were answered (201 accepted, 409 taken, 503 service-busy, …).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

sign_ins=40
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build ;;
        --sign-ins) sign_ins="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
cost="${BCRYPT_COST:-12}"
hostile=20

ensure_packages libpq-dev postgresql-15 curl
bench_build auth-service
start_bench_postgres
bench_start_mail
port="$(bench_free_port)"
base="http://127.0.0.1:$port"
bench_start auth env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=auth HTTP_PORT="$port" LOG_LEVEL=warning \
    BCRYPT_COST="$cost" "$BENCH_BIN/auth-service"
bench_wait_ready "$base/health/ready" "$BENCH_WORK/auth.log"

password="benchmark passphrase"
curl -fsS -o /dev/null -X POST "$base/v1/auth/signup" -H 'Content-Type: application/json' \
    -d "{\"email\":\"signer@example.com\",\"password\":\"$password\",\"experience\":\"ticketmaster\"}"

# The time (ms) of one sign-in from an address no hostile client uses.
sign_in_ms() {
    curl -sS -o /dev/null -w '%{time_total}\n' -X POST "$base/v1/auth/login" -H 'Content-Type: application/json' \
        -H 'X-Real-IP: 192.0.2.1' -d "{\"email\":\"signer@example.com\",\"password\":\"$password\"}" \
        | awk '{ printf "%.1f\n", $1 * 1000 }'
}
percentile() { awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100); if (i < NR * p / 100) i++; print v[i] }'; }

# One hostile body: the largest fields allowed, padded with JSON whitespace to auth-service's 64 KiB.
python3 - "$BENCH_WORK/hostile.json" <<'PY'
import json, sys
body = json.dumps({"email": "x" * 64 + "@" + "a" * 63 + "." + "b" * 63 + "." + "c" * 61, "password": "\U0001F600\U0001F601" * 128,
                   "experience": "ticketmaster"}, ensure_ascii=False)
open(sys.argv[1], "w").write(body[:-1] + " " * (65536 - len(body.encode()) - 1) + "}")
PY

for _ in $(seq 1 "$sign_ins"); do sign_in_ms; done | sort -n >"$BENCH_WORK/quiet.txt"
# Each sign-in goes out with a burst of hostile sign-ups, every one from a new address, and the next waits for all.
for round in $(seq 1 "$sign_ins"); do
    attackers=()
    for client in $(seq 1 "$hostile"); do
        curl -sS -o /dev/null -w '%{http_code}\n' -X POST "$base/v1/auth/signup" -H 'Content-Type: application/json' \
            -H "X-Real-IP: 10.$client.$((round / 250)).$((round % 250 + 1))" --data-binary "@$BENCH_WORK/hostile.json" \
            >>"$BENCH_WORK/hostile.txt" &
        attackers+=($!)
    done
    sign_in_ms >>"$BENCH_WORK/attacked.txt"
    wait "${attackers[@]}"
done
sort -n -o "$BENCH_WORK/attacked.txt" "$BENCH_WORK/attacked.txt"

quiet_p50="$(percentile 50 <"$BENCH_WORK/quiet.txt")" quiet_p99="$(percentile 99 <"$BENCH_WORK/quiet.txt")"
attacked_p50="$(percentile 50 <"$BENCH_WORK/attacked.txt")" attacked_p99="$(percentile 99 <"$BENCH_WORK/attacked.txt")"
printf '%-34s %10s %10s\n' "sign-in (ms, $sign_ins one at a time)" p50 p99
printf '%-34s %10s %10s\n' "alone" "$quiet_p50" "$quiet_p99"
printf '%-34s %10s %10s\n' "each with $hostile hostile sign-ups" "$attacked_p50" "$attacked_p99"
printf '%-34s %10s %10s\n' "ratio" "$(ratio "$attacked_p50" "$quiet_p50")" "$(ratio "$attacked_p99" "$quiet_p99")"
echo "hostile answers: $(sort "$BENCH_WORK/hostile.txt" | uniq -c | awk '{ printf "%s×%s ", $2, $1 }')"
echo "bcrypt cost $cost"
bench_stamp
