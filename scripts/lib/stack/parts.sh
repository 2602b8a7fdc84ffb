# shellcheck shell=bash
# The steps of `scripts/stack up` that no tool does (sourced by scripts/stack, after settings.sh); supervisord
# (supervisord.conf) runs every process.

build_services() {
    if [[ -z "${STACK_BIN_DIR:-}" ]]; then
        ensure_swift
        log_info "scripts/build -c $BUILD_CONFIG" # every product in one build: the one the tests use, in debug
        "$ROOT/scripts/build" -c "$BUILD_CONFIG" || die "the build failed"
    fi
    local service
    for service in "${SERVICES[@]}" replay-upstream; do [[ -x "$BIN_DIR/$service" ]] || die "no $BIN_DIR/$service"; done
    [[ -d "$FIXTURES_DIR" ]] || die "no fixtures at $FIXTURES_DIR (set STACK_FIXTURES_DIR)"
}

# $LOCAL_DIR/$1, which system user $2 (postgres, nginx's workers) must reach when the stack runs as root; when a parent
# directory is closed to that user (a checkout under /root), a directory outside the project instead.
reachable_dir() { # name user
    local dir="$LOCAL_DIR/$1"
    mkdir -p "$dir"
    if is_root && ! runuser -u "$2" -- test -x "$dir" 2>/dev/null; then
        dir="/var/lib/favoriteme-stack/$(printf '%s' "$LOCAL_DIR" | sha256sum | cut -c1-12)/$1"
        mkdir -p "$dir" && log_warn "$2 cannot reach $LOCAL_DIR/$1; using $dir instead"
    fi
    printf '%s\n' "$dir"
}

# Starts supervisord unless it runs, with the values supervisord.conf reads (%(ENV_…)s) and nothing else of this
# shell's environment: no secret, nothing exported by chance. It keeps them: a later `up` with others must restart.
start_supervisord() {
    local pg_user pg_dir session deadline=$((SECONDS + 20))
    local -a environment
    pg_user="$(id -un)"
    if is_root; then pg_user=postgres; fi # PostgreSQL refuses to run as root
    pg_dir="$(reachable_dir postgres "$pg_user")"
    ensure_mail_server
    session='import os, sys; os.setpgid(0, os.getpgid(os.getppid())); os.setsid(); os.execv(sys.argv[1], sys.argv[1:])'
    environment=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "HOME=${HOME:-/}"
        "LANG=${LANG:-C.UTF-8}" "STACK_ROOT=$ROOT" "STACK_DIR=$LOCAL_DIR" "STACK_LOG_DIR=$LOG_DIR"
        "STACK_RUN_DIR=$RUN_DIR" "STACK_BIN_DIR=$BIN_DIR" "STACK_REPLICAS=$REPLICAS" "STACK_PG_BIN=$PG_BIN"
        "STACK_PG_DATA=$pg_dir/data" "STACK_PG_SOCKET_DIR=$pg_dir/run" "STACK_PG_PORT=$PG_PORT" "STACK_PG_USER=$pg_user"
        "STACK_NGINX=$(nginx_bin)" "STACK_REPLAY_PORT=$REPLAY_PORT" "STACK_FIXTURES_DIR=$FIXTURES_DIR"
        "STACK_MAIL_PYTHON=$MAIL_PYTHON" "STACK_SMTP_PORT=$SMTP_PORT" "STACK_OWN_SESSION=/usr/bin/python3 -c '$session'")
    if supervisord_pid >/dev/null; then
        cmp -s "$RUN_DIR/supervisord.env" <(printf '%s\n' "${environment[@]}") \
            || die "the stack runs with other settings (STACK_*, or the build); run 'scripts/stack restart'"
        return 0
    fi
    printf '%s\n' "${environment[@]}" >"$RUN_DIR/supervisord.env"
    ensure_venv supervisor "$SUPERVISOR_REQUIREMENT"
    log_info "starting supervisord (log: $LOG_DIR/supervisord.log)"
    env -i "${environment[@]}" "$VENV/bin/supervisord" -c "$ROOT/scripts/lib/stack/supervisord.conf" \
        </dev/null >>"$LOG_DIR/supervisord.log" 2>&1 9>&- || die "supervisord did not start; see $LOG_DIR/supervisord.log"
    until ctl pid >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "supervisord did not answer within 20 s; see $LOG_DIR/supervisord.log"
        sleep 0.2
    done
}
stack_value() { sed -n "s/^$1=//p" "$RUN_DIR/supervisord.env"; } # NAME: a value supervisord started with

# Starts the named processes that are not running (each must run a second); when one fails, shows the logs' ends.
ctl_start() { # name…
    ctl start "$@" >&2 && return 0
    tail -n 20 "$LOG_DIR"/*.log >&2
    die "could not start $* (logs above)"
}

# PostgreSQL: initdb once, the server from supervisord, then the one bootstrap (deploy/postgres/init.sql, safe to
# repeat) over the Unix socket, with stack.env's passwords (made once, mode 600) in psql's environment, not its argv.
pg_up() {
    local data socket_dir service key deadline=$((SECONDS + 60))
    local -a passwords=()
    data="$(stack_value STACK_PG_DATA)" socket_dir="$(stack_value STACK_PG_SOCKET_DIR)"
    ((${#socket_dir} + 16 <= 107)) || die "$socket_dir is too long for a Unix socket's path; use a shorter STACK_DIR"
    if [[ ! -f "$data/PG_VERSION" ]]; then
        log_info "initdb $data"
        mkdir -p "$data" "$socket_dir"
        if is_root; then chown -R postgres:postgres "$(dirname "$data")"; fi
        as_postgres_owner "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C.UTF-8 --auth-local=trust \
            --auth-host=scram-sha-256 >>"$LOG_DIR/postgres.log" 2>&1 || die "initdb failed (log: $LOG_DIR/postgres.log)"
    fi
    ctl_start postgres
    until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; do
        ((SECONDS < deadline)) || die "PostgreSQL is not ready after 60 s (log: $LOG_DIR/postgres.log)"
        sleep 0.2
    done
    (umask 077 && touch "$LOCAL_DIR/stack.env")
    for service in "${SERVICES[@]}"; do
        key="$(password_key "$service")"
        [[ -n "$(stack_secret "$key")" ]] || printf '%s=%s\n' "$key" "$(openssl rand -hex 24)" >>"$LOCAL_DIR/stack.env"
        passwords+=("$key=$(stack_secret "$key")")
    done
    log_info "bootstrapping database favoriteme (deploy/postgres/init.sql)"
    (export "${passwords[@]}" && as_postgres_owner "$PG_BIN/psql" -X -q -h "$socket_dir" -p "$PG_PORT" -U postgres \
        -d postgres -f "$ROOT/deploy/postgres/init.sql") || die "the bootstrap failed"
}
password_key() { printf '%s_DB_PASSWORD\n' "${SERVICE_ROLE[$1]^^}"; } # service
stack_secret() { sed -n "s/^$1=//p" "$LOCAL_DIR/stack.env" | tail -n 1; } # KEY: stack.env is read, never sourced

# .env.stack's KEY=VALUE lines (comments, blank lines, `export ` and one level of quotes allowed), parsed rather than
# sourced, so the file is plain data, like docker's env files.
USER_ENV=()
load_user_env() {
    local line number=0
    [[ -f "$USER_ENV_FILE" ]] || return 0
    while IFS= read -r line || [[ -n "$line" ]]; do
        number=$((number + 1)) line="${line%$'\r'}"
        line="${line#export }"
        if [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(\"(.*)\"|\'(.*)\'|(.*))$ ]]; then
            USER_ENV+=("${BASH_REMATCH[1]}=${BASH_REMATCH[3]}${BASH_REMATCH[4]}${BASH_REMATCH[5]}")
        elif [[ ! "$line" =~ ^[[:space:]]*(#|$) ]]; then
            log_warn "$USER_ENV_FILE:$number: ignored (not KEY=VALUE)"
        fi
    done <"$USER_ENV_FILE"
}
user_env_has() { [[ " ${USER_ENV[*]%%=*} " == *" $1 "* ]]; } # KEY

# The environment of service $1, one KEY=VALUE a line. .env.stack comes after our defaults so it can override them,
# except HTTP_HOST and HTTP_PORT, which define the replica. Sources .env.stack does not point at a real API go to
# replay-upstream; mail goes to the stack's mail server unless it names another.
service_env() {
    local service="$1" replay="http://127.0.0.1:$REPLAY_PORT"
    printf '%s\n' "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "HOME=${HOME:-/}" \
        "LANG=${LANG:-C.UTF-8}" "LOG_FORMAT=json" "LOG_LEVEL=${LOG_LEVEL:-info}" \
        "DATABASE_URL=postgresql://${SERVICE_ROLE[$service]}:$(stack_secret "$(password_key "$service")")@127.0.0.1:$PG_PORT/favoriteme" \
        "AUTH_URL=http://127.0.0.1:$PEER_PORT" "CATALOG_URL=http://127.0.0.1:$PEER_PORT"
    if [[ "$service" == catalog-proxy ]]; then
        user_env_has TICKETMASTER_API_KEY || printf '%s\n' "TICKETMASTER_URL=$replay" "TICKETMASTER_API_KEY=replay"
        # Records through the replay's imitation of the museum's resolver, on another host name than the data it sends
        # them to, as id.rijksmuseum.nl sends them to data.rijksmuseum.nl: the stack goes through the live redirect.
        user_env_has RIJKSMUSEUM_SEARCH_URL \
            || printf '%s\n' "RIJKSMUSEUM_SEARCH_URL=$replay" "RIJKSMUSEUM_RECORDS_URL=http://localhost:$REPLAY_PORT/id"
        user_env_has NYT_BOOKS_API_KEY || printf '%s\n' "NYT_BOOKS_URL=$replay" "NYT_BOOKS_API_KEY=replay"
        user_env_has GOOGLE_BOOKS_URL || user_env_has GOOGLE_BOOKS_API_KEY || echo "GOOGLE_BOOKS_URL=$replay"
        user_env_has FLASHCARDS_URL || echo "FLASHCARDS_URL=$replay"
    elif [[ "$service" == auth-service ]]; then
        user_env_has SMTP_HOST || printf '%s\n' "SMTP_HOST=127.0.0.1" "SMTP_PORT=$SMTP_PORT"
        user_env_has PUBLIC_BASE_URL || echo "PUBLIC_BASE_URL=http://localhost:$GATEWAY_PORT"
    fi
    if ((${#USER_ENV[@]})); then printf '%s\n' "${USER_ENV[@]}"; fi
    printf '%s\n' "HTTP_HOST=127.0.0.1" "HTTP_PORT_BASE=$(replica_port "$service" 0)"
}

# run/<service>.env, which each replica sources as it starts (supervisord.conf): bash-quoted, mode 600.
write_service_env() {
    local service line
    load_user_env
    for service in "${SERVICES[@]}"; do
        (umask 077 && while IFS= read -r line; do printf '%s=%q\n' "${line%%=*}" "${line#*=}"; done \
            < <(service_env "$service") >"$RUN_DIR/$service.env")
    done
}

# The phones and flash cards catalog-proxy serves from its own copy, loaded from the recordings at every `up`.
load_datasets() {
    local mobiles="$FIXTURES_DIR/mobiles" cards="$FIXTURES_DIR/flashcards"
    # shellcheck disable=SC2016  # expanded by the inner shell
    env -i /bin/bash -c 'set -a && . "$0" && "$1" load mobiles "$2" "$3" && "$1" load flashcards "$4"' \
        "$RUN_DIR/catalog-proxy.env" "$BIN_DIR/catalog-proxy" "$mobiles/harshil64-mobiles-list.json" \
        "$mobiles/unidentified-repo-mobile-1-images.json" "$cards/bcecilio-cards-live.json" \
        >>"$LOG_DIR/datasets.log" 2>&1 </dev/null || die "loading the datasets failed; see $LOG_DIR/datasets.log"
}

# Replicas (and replay-upstream) whose executable was rebuilt since they started (Linux marks it "(deleted)") are
# restarted one at a time, each serving again before the next goes, so the others keep serving.
replace_stale_replicas() {
    local name state rest
    while read -r name state rest; do
        [[ "$state" == RUNNING && "$rest" =~ pid\ ([0-9]+) ]] || continue
        [[ "$(readlink "/proc/${BASH_REMATCH[1]}/exe")" == *" (deleted)" ]] || continue
        log_info "${name#*:} runs an older build; restarting it"
        ctl restart "$name" >/dev/null || die "could not restart ${name#*:}"
        [[ "$name" == replay-upstream ]] || wait_for_200 \
            "http://127.0.0.1:$(replica_port "${name%%:*}" "${name##*-}")/health/live" $((SECONDS + 30))
    done < <(ctl status "${SERVICES[@]/%/:*}" replay-upstream)
}

# The gateway's config: deploy/nginx/gateway.conf.template with this stack's values (envsubst replaces only the
# GATEWAY_* names: nginx's own $variables stay), checked with `nginx -t` before it replaces the running one, which
# is reloaded (SIGHUP) only when it changed: a reload closes the workers' idle client connections.
gateway_up() {
    local dir="$LOCAL_DIR/nginx" service n worker changed=0
    mkdir -p "$dir"
    (
        export GATEWAY_PORT GATEWAY_HOST=127.0.0.1 GATEWAY_PEER_PORT="$PEER_PORT" GATEWAY_REAL_IP_FROM=unix: \
            GATEWAY_PROBE_LISTEN="unix:$RUN_DIR/gateway-probe.sock" GATEWAY_ERROR_LOG="$LOG_DIR/gateway-error.log" \
            GATEWAY_ACCESS_LOG="$LOG_DIR/gateway-access.log" GATEWAY_SIGNIN_RATE="$SIGNIN_RATE" \
            GATEWAY_SIGNIN_BURST="$SIGNIN_BURST" GATEWAY_TEMP_DIR
        # As root the workers switch to nginx's compiled-in user (we set none), which must reach the temp files.
        worker="$("$(nginx_bin)" -V 2>&1 | sed -n 's/.*--user=\([^ ]*\).*/\1/p')"
        GATEWAY_TEMP_DIR="$(reachable_dir nginx/tmp "${worker:-nobody}")"
        for service in "${SERVICES[@]}"; do
            export "GATEWAY_${SERVICE_ROUTE[$service]^^}_SERVERS=$(for ((n = 1; n <= REPLICAS; n++)); do
                printf 'server 127.0.0.1:%s max_fails=0; ' "$(replica_port "$service" "$n")"; done)"
        done
        # shellcheck disable=SC2016  # the names, for envsubst
        envsubst "$(printf '${%s} ' "${!GATEWAY_@}")" <"$ROOT/deploy/nginx/gateway.conf.template"
    ) >"$dir/nginx.conf.new"
    "$(nginx_bin)" -t -q -p "$dir/" -e "$LOG_DIR/gateway-error.log" -c nginx.conf.new \
        || die "the gateway's config does not validate ($dir/nginx.conf.new)"
    cmp -s "$dir/nginx.conf.new" "$dir/nginx.conf" || changed=1
    mv -f "$dir/nginx.conf.new" "$dir/nginx.conf"
    if ((changed)) && [[ "$(ctl status gateway)" == *RUNNING* ]]; then ctl signal HUP gateway >&2; fi
    ctl_start gateway
}

# Ready: every replica on its own port (a rolling restart must not stop the next replica before this one serves),
# then every service through the gateway.
wait_until_ready() {
    local deadline=$((SECONDS + WAIT_SECONDS)) service n url
    local -a urls=()
    for service in "${SERVICES[@]}"; do
        for ((n = 1; n <= REPLICAS; n++)); do urls+=("http://127.0.0.1:$(replica_port "$service" "$n")/health/ready"); done
        urls+=("http://127.0.0.1:$GATEWAY_PORT/v1/${SERVICE_ROUTE[$service]}/health/ready")
    done
    log_info "waiting up to ${WAIT_SECONDS}s for the services to become ready"
    for url in "${urls[@]}"; do wait_for_200 "$url" "$deadline"; done
}

# Waits until URL $1 answers 200, until second $2 of this run (SECONDS) at the latest, else fails showing the logs.
wait_for_200() { # url deadline
    until [[ "$(http_code "$1")" == 200 ]]; do
        if ((SECONDS >= $2)); then
            tail -n 20 "$LOG_DIR"/*-service-*.log "$LOG_DIR"/catalog-proxy-*.log "$LOG_DIR/gateway-error.log" >&2 || true
            die "not ready in time: $1 answers $(http_code "$1") ('scripts/stack status')"
        fi
        sleep 0.1
    done
}
