#!/usr/bin/env bash
# What a Rijksmuseum page costs through the gateway: a new stack's first browse page of 30 (1 search + ~3 record GETs
# per object), a warm one (the objects resolved, its page of ids new), a hot one (this replica's cache), and cold and
# warm details, with the upstream calls each made. Release builds of auth-service, replay-upstream and catalog-proxy on a throwaway
# PostgreSQL 15, nginx in front as the gateway. Every upstream answer is delayed by --upstream-ms (default 80, about
# what the museum's services take from Europe), so cold figures show the fan-out's waits, not only our CPU.
#
#   bench/fanout.sh [--quick] [--upstream-ms 80] [--seconds 10]
#
# Figures are printed, nothing asserted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

upstream_ms=80
seconds=10
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2 ;;
        --upstream-ms) upstream_ms="$2"; shift ;;
        --seconds) seconds="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures

ensure_packages libpq-dev postgresql-15 curl wrk nginx

bench_build auth-service replay-upstream catalog-proxy
start_bench_postgres
bench_start_catalog_services "$BENCH_BIN" "$fixtures"
replay="$BENCH_REPLAY_URL"

gateway_port="$(bench_free_port)"
bench_start_nginx "
    upstream catalog { server ${BENCH_CATALOG_URL#http://}; keepalive 32; }
    server {
        listen 127.0.0.1:$gateway_port;
        location / {
            proxy_pass http://catalog;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
gateway="http://127.0.0.1:$gateway_port"
sleep 0.5

token="$(curl -sS -X POST "$BENCH_AUTH_URL/v1/auth/signup" -H 'Content-Type: application/json' \
    -d '{"email":"fanout@example.com","password":"benchmark passphrase","experience":"rijksmuseum"}' |
    sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
[[ -n "$token" ]] || die "sign-up failed"
auth_header="Authorization: Bearer $token"

# Every upstream answer late by --upstream-ms, until the end.
curl -fsS -X POST "$replay/__replay/faults" -H 'Content-Type: application/json' \
    -d "{\"delayMs\": $upstream_ms}" >/dev/null

calls() { curl -fsS "$replay/__replay/requests" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
# One request: its time in ms, the upstream calls it caused, and the items of a page (or 1 for a detail).
measure() { # label path
    local before after out
    before="$(calls)"
    out="$(curl -fsS -o "$BENCH_WORK/answer.json" -w '%{time_total}' -H "$auth_header" "$gateway$2")" ||
        die "$2 failed"
    after="$(calls)"
    python3 - "$1" "$out" "$((after - before))" "$BENCH_WORK/answer.json" <<'PY'
import json, sys
label, seconds, calls, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
answer = json.load(open(path))
print(f"{label:<46} {seconds * 1000:9.1f} ms   upstream calls {calls:4d}   items {len(answer.get('items', [answer]))}")
PY
}

printf 'Rijksmuseum through nginx, upstream answers delayed %s ms\n' "$upstream_ms"
measure "cold search (browse, a first page of 30)" "/v1/catalog/rijksmuseum/items?limit=30"
measure "warm search (other page size: ids shared)" "/v1/catalog/rijksmuseum/items?limit=29"
measure "hot search (this replica's cache)" "/v1/catalog/rijksmuseum/items?limit=30"
measure "cold search (\"rembrandt\", 4 objects)" "/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4"
measure "warm search (same objects, new id page)" "/v1/catalog/rijksmuseum/items?q=Rembrandt%20van%20Rijn&limit=4"
measure "cold detail (RP-T-1930-54(V), never listed)" "/v1/catalog/rijksmuseum/items/RP-T-1930-54(V)"
measure "warm detail (SK-C-5, resolved by a search)" "/v1/catalog/rijksmuseum/items/SK-C-5"
measure "hot detail (SK-C-5 again)" "/v1/catalog/rijksmuseum/items/SK-C-5"

read -r hot_rps hot_p99 hot_errors <<<"$(wrk -t2 -c16 -d"${seconds}s" --latency -H "$auth_header" \
    "$gateway/v1/catalog/rijksmuseum/items?limit=30" | bench_wrk_figures)"
printf '%-46s %9s rps   p99 %s ms   non-2xx %s\n' "hot search under load (16 connections)" "$hot_rps" "$hot_p99" \
    "$hot_errors"
bench_stamp
