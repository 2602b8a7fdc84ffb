#!/usr/bin/env bash
# catalog-proxy serving a cached search vs nginx's proxy_cache serving the same response and vs a bare Hummingbird
# route serving the same bytes, on this machine, in one run. Release builds of auth-service (for tokens), replay-upstream (the recorded upstream) and catalog-proxy on a
# throwaway PostgreSQL 15; nginx from Debian; wrk for the load.
#
#   bench/catalog.sh [--quick] [--seconds 10] [--connections 16]
#
# Both sides answer from memory: catalog-proxy from its cache after verifying the caller's access token (EdDSA) and
# per-user budget, nginx from its proxy_cache (with open_file_cache, so no disk read per hit) without looking at the
# token. Ratio = catalog-proxy ÷ nginx.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

seconds=10
connections=16
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2 ;;
        --seconds) seconds="$2"; shift ;;
        --connections) connections="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures

ensure_packages libpq-dev postgresql-15 curl wrk nginx

bench_build auth-service replay-upstream catalog-proxy
bin="$BENCH_BIN"

start_bench_postgres
bench_start_catalog_services "$bin" "$fixtures"
catalog="$BENCH_CATALOG_URL"

token="$(curl -sS -X POST "$BENCH_AUTH_URL/v1/auth/signup" -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.com","password":"benchmark passphrase","experience":"ticketmaster"}' |
    sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
[[ -n "$token" ]] || die "sign-up failed"
path="/v1/catalog/ticketmaster/items?q=Chicago&limit=5"

nginx_port="$(bench_free_port)"
bench_start_nginx "
    open_file_cache max=1000 inactive=60s;
    upstream catalog { server ${catalog#http://}; keepalive 32; }
    server {
        listen 127.0.0.1:$nginx_port;
        location / {
            proxy_pass http://catalog;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_cache bench;
            proxy_cache_key \$request_uri;
            proxy_cache_valid 200 1h;
            proxy_ignore_headers Cache-Control Expires;
        }
    }"
sleep 0.5

auth_header="Authorization: Bearer $token"
curl -fsS -o /dev/null -H "$auth_header" "$catalog$path"  # warm catalog-proxy's cache
curl -fsS -o /dev/null -H "$auth_header" "http://127.0.0.1:$nginx_port$path"    # warm nginx's cache
[[ "$(curl -fsS -o /dev/null -w '%{http_code}' -H "$auth_header" "http://127.0.0.1:$nginx_port$path")" == 200 ]] ||
    die "nginx does not answer; see $BENCH_NGINX_DIR/error.log"
bytes="$(curl -fsS -H "$auth_header" "$catalog$path" | wc -c)"

load() { wrk -t2 -c"$connections" -d"${seconds}s" --latency -H "$auth_header" "$1" | bench_wrk_figures; }

# A bare Hummingbird route serving the very same bytes (replay-upstream's static route: no middleware, no token).
curl -fsS -H "$auth_header" "$catalog$path" >"$BENCH_WORK/body.json"
bare_port="$(bench_free_port)"
bench_start bare "$bin/replay-upstream" --port "$bare_port" --fixtures "$fixtures" --static-body "$BENCH_WORK/body.json"
bench_wait_ready "http://127.0.0.1:$bare_port/__replay/static" "$BENCH_WORK/bare.log"

read -r catalog_rps catalog_p99 catalog_errors <<<"$(load "$catalog$path")"
read -r bare_rps bare_p99 bare_errors <<<"$(load "http://127.0.0.1:$bare_port/__replay/static")"
read -r nginx_rps nginx_p99 nginx_errors <<<"$(load "http://127.0.0.1:$nginx_port$path")"
# The same process's cheapest route (the kit's middleware, no token, no cache): what the framework alone costs here.
read -r live_rps live_p99 live_errors <<<"$(load "$catalog/health/live")"

printf 'cached search, %s-byte body, %s connections, %ss each\n' "$bytes" "$connections" "$seconds"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "catalog-proxy (cache hit)" "$catalog_rps" "$catalog_p99" "$catalog_errors"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "bare Hummingbird route (same bytes)" "$bare_rps" "$bare_p99" "$bare_errors"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "nginx proxy_cache (same response)" "$nginx_rps" "$nginx_p99" "$nginx_errors"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "catalog-proxy GET /health/live" "$live_rps" "$live_p99" "$live_errors"
printf '%-34s %10s       p99 ratio %s\n' "ratio catalog-proxy / nginx" "$(ratio "$catalog_rps" "$nginx_rps")" \
    "$(ratio "$catalog_p99" "$nginx_p99")"
printf '%-34s %10s       p99 ratio %s\n' "ratio catalog-proxy / bare route" "$(ratio "$catalog_rps" "$bare_rps")" \
    "$(ratio "$catalog_p99" "$bare_p99")"
printf '%-34s %10s\n' "ratio cache hit / health route" "$(ratio "$catalog_rps" "$live_rps")"
bench_stamp
