#!/usr/bin/env bash
# catalog-proxy serving a cached search vs nginx's proxy_cache serving the same response, on this machine, in one
# run. Release builds of auth-service (for tokens), replay-upstream (the recorded upstream) and catalog-proxy on a
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
        --quick) seconds=3 ;;
        --seconds) seconds="$2"; shift ;;
        --connections) connections="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
fixtures="${STACK_FIXTURES_DIR:-$PWD/../shared/fixtures}"
[[ -d "$fixtures" ]] || die "no fixtures at $fixtures"

ensure_packages libpq-dev postgresql-15 curl wrk nginx

log_info "building auth-service, replay-upstream and catalog-proxy (release)"
for product in auth-service replay-upstream catalog-proxy; do
    swift build -c release --scratch-path .build-release --product "$product" >/dev/null
done
bin="$(swift build -c release --scratch-path .build-release --show-bin-path)"

start_bench_postgres
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
auth_port="$(free_port)"; replay_port="$(free_port)"; catalog_port="$(free_port)"; nginx_port="$(free_port)"
pids=()
stop_processes() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n "${nginx_dir:-}" ]] && rm -rf "$nginx_dir"
}
BENCH_CLEANUP=stop_processes

wait_ready() { # url log
    for _ in $(seq 1 120); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.5
    done
    cat "$2" >&2
    die "$1 did not answer"
}

"$bin/replay-upstream" --port "$replay_port" --fixtures "$fixtures" >"$BENCH_WORK/replay.log" 2>&1 &
pids+=($!)
DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=auth HTTP_PORT="$auth_port" LOG_LEVEL=warning BCRYPT_COST=4 \
    "$bin/auth-service" >"$BENCH_WORK/auth.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$auth_port/health/ready" "$BENCH_WORK/auth.log"
DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=catalog HTTP_PORT="$catalog_port" LOG_LEVEL=warning \
    AUTH_URL="http://127.0.0.1:$auth_port" TICKETMASTER_URL="http://127.0.0.1:$replay_port" TICKETMASTER_API_KEY=replay \
    RIJKSMUSEUM_URL="http://127.0.0.1:$replay_port" RIJKSMUSEUM_API_KEY=replay \
    CATALOG_SEARCH_TTL_SECONDS=3600 CATALOG_USER_RATE_PER_SECOND=1000000 \
    "$bin/catalog-proxy" >"$BENCH_WORK/catalog.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$catalog_port/health/ready" "$BENCH_WORK/catalog.log"

token="$(curl -sS -X POST "http://127.0.0.1:$auth_port/v1/auth/signup" -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.com","password":"benchmark passphrase","experience":"ticketmaster"}' |
    sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
[[ -n "$token" ]] || die "sign-up failed"
path="/v1/catalog/ticketmaster/items?q=Chicago&limit=5"

# Outside BENCH_WORK (owned by postgres, mode 700): nginx's workers run as an unprivileged user and must reach it.
nginx_dir="$(mktemp -d /tmp/favoriteme-bench-nginx-XXXXXX)"
mkdir -p "$nginx_dir/cache" "$nginx_dir/temp"
chmod -R 777 "$nginx_dir"
chmod 755 "$nginx_dir"
cat >"$nginx_dir/nginx.conf" <<NGINX
worker_processes 2;
pid $nginx_dir/nginx.pid;
error_log $nginx_dir/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $nginx_dir/temp;
    proxy_temp_path $nginx_dir/temp;
    fastcgi_temp_path $nginx_dir/temp;
    uwsgi_temp_path $nginx_dir/temp;
    scgi_temp_path $nginx_dir/temp;
    open_file_cache max=1000 inactive=60s;
    proxy_cache_path $nginx_dir/cache keys_zone=bench:10m;
    upstream catalog { server 127.0.0.1:$catalog_port; keepalive 32; }
    server {
        listen 127.0.0.1:$nginx_port;
        location / {
            proxy_pass http://catalog;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache bench;
            proxy_cache_key \$request_uri;
            proxy_cache_valid 200 1h;
            proxy_ignore_headers Cache-Control Expires;
        }
    }
}
NGINX
nginx -p "$nginx_dir" -c "$nginx_dir/nginx.conf" -g 'daemon off;' 2>"$nginx_dir/start.log" &
pids+=($!)
sleep 0.5

auth_header="Authorization: Bearer $token"
curl -fsS -o /dev/null -H "$auth_header" "http://127.0.0.1:$catalog_port$path"  # warm catalog-proxy's cache
curl -fsS -o /dev/null -H "$auth_header" "http://127.0.0.1:$nginx_port$path"    # warm nginx's cache
[[ "$(curl -fsS -o /dev/null -w '%{http_code}' -H "$auth_header" "http://127.0.0.1:$nginx_port$path")" == 200 ]] ||
    die "nginx does not answer; see $nginx_dir/error.log"
bytes="$(curl -fsS -H "$auth_header" "http://127.0.0.1:$catalog_port$path" | wc -c)"

figures() {
    awk '
        /Requests\/sec:/ { rps = $2 }
        /^ +99%/ { v = $2; unit = v; gsub(/[0-9.]/, "", unit); gsub(/[a-z]/, "", v)
                   p99 = (unit == "us") ? v / 1000 : (unit == "s") ? v * 1000 : v }
        /Non-2xx/ { errors = $NF }
        END { printf "%.0f %.2f %d\n", rps, p99, errors }'
}
load() { wrk -t2 -c"$connections" -d"${seconds}s" --latency -H "$auth_header" "$1" | figures; }

read -r catalog_rps catalog_p99 catalog_errors <<<"$(load "http://127.0.0.1:$catalog_port$path")"
read -r nginx_rps nginx_p99 nginx_errors <<<"$(load "http://127.0.0.1:$nginx_port$path")"
# The same process's cheapest route (the kit's middleware, no token, no cache): what the framework alone costs here.
read -r live_rps live_p99 live_errors <<<"$(load "http://127.0.0.1:$catalog_port/health/live")"

printf 'cached search, %s-byte body, %s connections, %ss each\n' "$bytes" "$connections" "$seconds"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "catalog-proxy (cache hit)" "$catalog_rps" "$catalog_p99" "$catalog_errors"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "nginx proxy_cache (same response)" "$nginx_rps" "$nginx_p99" "$nginx_errors"
printf '%-34s %10s rps   p99 %8s ms   non-2xx %s\n' "catalog-proxy GET /health/live" "$live_rps" "$live_p99" "$live_errors"
printf '%-34s %10s       p99 ratio %s\n' "ratio catalog-proxy / nginx" "$(ratio "$catalog_rps" "$nginx_rps")" \
    "$(ratio "$catalog_p99" "$nginx_p99")"
printf '%-34s %10s\n' "ratio cache hit / health route" "$(ratio "$catalog_rps" "$live_rps")"
bench_stamp
