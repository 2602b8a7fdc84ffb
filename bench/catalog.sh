#!/usr/bin/env bash
# catalog-proxy, in two parts, on a throwaway PostgreSQL 15 with release builds of auth-service, replay-upstream (the
# recorded catalogs) and catalog-proxy, and nginx.
#   1. A cache hit against its peers: wrk (2 threads, --connections, --seconds) on a cached search
#      (ticketmaster, `q=Chicago&limit=5`) from catalog-proxy (token check, per-user budget, cache), from nginx's
#      proxy_cache (the same response, no token looked at), from catalog-proxy's /health/live (the kit alone), and
#      from a bare Hummingbird route serving the same bytes (replay-upstream's static route).
#   2. The fan-out of a Rijksmuseum page through nginx, every upstream answer delayed by --upstream-ms (about what the
#      museum takes from Europe): a new stack's first browse page of 30 (a search, then ~3 record GETs per object),
#      a warm one (objects resolved, its page of ids new), a hot one (this replica's cache), searches and details,
#      each with the upstream calls it caused (replay-upstream's request log); then wrk on the hot browse.
# Nothing asserted.
#
#   bench/catalog.sh [--quick] [--seconds 10] [--connections 16] [--upstream-ms 80]
set -euo pipefail
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"

seconds=10 connections=16 upstream_ms=80
bench_options "seconds=2" "$@"
ensure_packages libpq-dev postgresql-15 curl wrk nginx
bench_build auth-service replay-upstream catalog-proxy
start_bench_postgres
bench_back_end auth catalog
catalog="${BENCH_URL[catalog]}" cache_port="$(bench_free_port)" gateway_port="$(bench_free_port)"
bench_start_nginx nginx "
    upstream catalog { server ${catalog#http://}; keepalive 32; }
    proxy_cache_path $BENCH_WORK/nginx/cache keys_zone=bench:10m;
    open_file_cache max=1000 inactive=60s;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    server {
        listen 127.0.0.1:$cache_port;
        location / {
            proxy_pass http://catalog;
            proxy_cache bench;
            proxy_cache_key \$request_uri;
            proxy_cache_valid 200 1h;
            proxy_ignore_headers Cache-Control Expires;
        }
    }
    server { listen 127.0.0.1:$gateway_port; location / { proxy_pass http://catalog; } }"
bench_wait_ready "http://127.0.0.1:$gateway_port/health/live" "$BENCH_WORK/nginx/error.log"

token="$(bench_token "${BENCH_URL[auth]}" ticketmaster)"
path="/v1/catalog/ticketmaster/items?q=Chicago&limit=5"
curl -fsS -H "Authorization: Bearer $token" "$catalog$path" >"$BENCH_WORK/body.json"  # fills catalog-proxy's cache
curl -fsS -o /dev/null -H "Authorization: Bearer $token" "http://127.0.0.1:$cache_port$path"  # and nginx's
bare_port="$(bench_free_port)"
bench_start bare "$BENCH_BIN/replay-upstream" --port "$bare_port" --fixtures "$fixtures" --static-body "$BENCH_WORK/body.json"
bare="http://127.0.0.1:$bare_port/__replay/static"
bench_wait_ready "$bare" "$BENCH_WORK/bare.log"

echo "cached search, a $(wc -c <"$BENCH_WORK/body.json")-byte body, $connections connections, ${seconds}s each:" \
    "2xx/s, p99 ms, other answers, socket errors"
for target in "catalog-proxy (cache hit)=$catalog$path" "nginx proxy_cache=http://127.0.0.1:$cache_port$path" \
    "catalog-proxy /health/live=$catalog/health/live" "bare Hummingbird route=$bare"; do
    bench_wrk - "${target#*=}" "$connections" "$seconds" WRK_TOKEN="$token"
    read -r rps p99 others socket _ <<<"$result"
    printf '%-28s %10s %8s %5s %5s\n' "${target%%=*}" "$rps" "$p99" "$others" "$socket"
    rates+=("$rps")
done
echo "hit ÷ nginx $(ratio "${rates[0]}" "${rates[1]}"), hit ÷ health $(ratio "${rates[0]}" "${rates[2]}")," \
    "health ÷ bare $(ratio "${rates[2]}" "${rates[3]}")"

token="$(bench_token "${BENCH_URL[auth]}" rijksmuseum)"
curl -fsS -X POST "${BENCH_URL[replay]}/__replay/faults" -H 'Content-Type: application/json' \
    -d "{\"delayMs\": $upstream_ms}" >/dev/null
echo "Rijksmuseum through nginx, every upstream answer delayed $upstream_ms ms: time, upstream calls, items"
for page in "cold browse, a first page of 30=items?limit=30" "warm browse (29: ids shared)=items?limit=29" \
    "hot browse (this replica's cache)=items?limit=30" "cold search, rembrandt=items?q=rembrandt&limit=4" \
    "warm search, same objects, new ids=items?q=Rembrandt%20van%20Rijn&limit=4" \
    "cold detail, never listed=items/RP-T-1930-54(V)" "warm detail (resolved by a search)=items/SK-C-5" \
    "hot detail=items/SK-C-5"; do
    python3 - "${page%%=*}" "http://127.0.0.1:$gateway_port/v1/catalog/rijksmuseum/${page#*=}" \
        "${BENCH_URL[replay]}/__replay/requests" "$token" <<'PY'
import json, sys, time, urllib.request
label, url, calls, token = sys.argv[1:]
count = lambda: len(json.load(urllib.request.urlopen(calls)))
before, started = count(), time.perf_counter()
answer = json.load(urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token})))
print("%-40s %8.1f ms %5d calls %4d items" % (label, (time.perf_counter() - started) * 1000, count() - before,
                                              len(answer.get("items", [answer]))))
PY
done
bench_wrk - "http://127.0.0.1:$gateway_port/v1/catalog/rijksmuseum/items?limit=30" 16 "$seconds" WRK_TOKEN="$token"
read -r rps p99 others socket _ <<<"$result"
echo "hot browse under load (16 connections): $rps 2xx/s, p99 $p99 ms, other answers $others, socket errors $socket"
bench_stamp
