#!/usr/bin/env bash
# catalog-proxy (release builds, nginx in front), in two parts: 1. a cached search (wrk) from catalog-proxy, from
# nginx's proxy_cache, from catalog-proxy's /health/live and from a bare Hummingbird route with the same bytes;
# 2. a Rijksmuseum page's fan-out, every upstream answer delayed --upstream-ms: time and upstream calls of cold, warm
# and hot browses, searches and details, then wrk on the hot browse. Nothing asserted.
#   bench/catalog.sh [--quick] [--seconds 10] [--connections 16] [--upstream-ms 80]
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
seconds=10 connections=16 upstream_ms=80
bench_options "seconds=2" "$@"
ensure_packages libpq-dev postgresql-15 curl wrk nginx
bench_build auth-service replay-upstream catalog-proxy
start_bench_postgres
bench_back_end auth catalog
catalog="${BENCH_URL[catalog]}" cached="http://127.0.0.1:$(bench_free_port)" gateway="http://127.0.0.1:$(bench_free_port)"
bench_nginx nginx "upstream catalog { server ${catalog#http://}; keepalive 32; }
    proxy_cache_path $BENCH_WORK/nginx/cache keys_zone=bench:10m;
    open_file_cache max=1000 inactive=60s;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    server { listen ${cached#http://}; location / { proxy_pass http://catalog; proxy_cache bench;
        proxy_cache_key \$request_uri; proxy_cache_valid 200 1h; proxy_ignore_headers Cache-Control Expires; } }
    server { listen ${gateway#http://}; location / { proxy_pass http://catalog; } }"
bench_wait_ready "$gateway/health/live" "$BENCH_WORK/nginx/error.log"
python3 bench/tool.py ours-tokens "${BENCH_URL[auth]}" 1 "benchmark passphrase" "$BENCH_WORK/token.txt"
token="$(cat "$BENCH_WORK/token.txt")" path="/v1/catalog/ticketmaster/items?q=Chicago&limit=5"
curl -fsS -H "Authorization: Bearer $token" "$catalog$path" >"$BENCH_WORK/body.json"  # fills catalog-proxy's cache
curl -fsS -o /dev/null -H "Authorization: Bearer $token" "$cached$path"  # and nginx's
bare="http://127.0.0.1:$(bench_free_port)"
bench_start bare "$BENCH_BIN/replay-upstream" --port "${bare##*:}" --fixtures "$fixtures" --static-body "$BENCH_WORK/body.json"
bench_wait_ready "$bare/__replay/static" "$BENCH_WORK/bare.log"

echo "cached search, a $(wc -c <"$BENCH_WORK/body.json")-byte body, $connections connections, ${seconds}s each:" \
    "2xx/s, p99 ms, other answers, socket errors"
rates=()
for target in "catalog-proxy (cache hit)=$catalog$path" "nginx proxy_cache=$cached$path" \
    "catalog-proxy /health/live=$catalog/health/live" "bare Hummingbird route=$bare/__replay/static"; do
    bench_wrk - "${target#*=}" "$connections" "$seconds" WRK_TOKEN="$token"
    printf '%-28s %s\n' "${target%%=*}" "$(cut -d' ' -f1-4 <<<"$result")"
    rates+=("${result%% *}")
done
echo "hit ÷ nginx $(ratio "${rates[0]}" "${rates[1]}"), hit ÷ health $(ratio "${rates[0]}" "${rates[2]}")," \
    "health ÷ bare $(ratio "${rates[2]}" "${rates[3]}")"

curl -fsS -o /dev/null -X POST "${BENCH_URL[replay]}/__replay/faults" -H 'Content-Type: application/json' \
    -d "{\"delayMs\": $upstream_ms}"
echo "Rijksmuseum through nginx, every upstream answer delayed $upstream_ms ms: time, upstream calls"
calls() { curl -fsS "${BENCH_URL[replay]}/__replay/requests" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
for page in "cold browse, a first page of 30=items?limit=30" "warm browse (29: ids shared)=items?limit=29" \
    "hot browse (this replica's cache)=items?limit=30" "cold search, rembrandt=items?q=rembrandt&limit=4" \
    "warm search, same objects, new ids=items?q=Rembrandt%20van%20Rijn&limit=4" \
    "cold detail, never listed=items/RP-T-1930-54(V)" "warm detail, resolved by a search=items/SK-C-5" "hot detail=items/SK-C-5"; do
    before="$(calls)"
    seconds_taken="$(curl -fsS -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" \
        "$gateway/v1/catalog/rijksmuseum/${page#*=}")"
    printf '%-36s %8.1f ms %5d calls\n' "${page%%=*}" "$(python3 -c "print($seconds_taken * 1000)")" "$(($(calls) - before))"
done
bench_wrk - "$gateway/v1/catalog/rijksmuseum/items?limit=30" 16 "$seconds" WRK_TOKEN="$token"
echo "hot browse under load, 16 connections: $(cut -d' ' -f1-4 <<<"$result") (2xx/s, p99 ms, others, socket errors)"
bench_stamp
