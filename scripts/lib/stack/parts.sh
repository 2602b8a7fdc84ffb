# shellcheck shell=bash
# The steps of `scripts/stack up` that no tool does for it (sourced by scripts/stack, after settings.sh): the build,
# supervisord's start, PostgreSQL's cluster and bootstrap, the services' environment, the catalog's datasets, the
# gateway's config, and the readiness wait. supervisord (supervisord.conf) runs every process.

build_services() {
    if [[ -n "${STACK_BIN_DIR:-}" ]]; then
        log_info "using prebuilt binaries from $BIN_DIR (STACK_BIN_DIR)"
    else
        ensure_swift
        # Every product in one build (the services, replay-upstream, favme): the build the tests use, in debug.
        log_info "scripts/build -c $BUILD_CONFIG"
        "$ROOT/scripts/build" -c "$BUILD_CONFIG" || die "the build failed"
    fi
    local service
    for service in "${SERVICES[@]}" replay-upstream; do
        [[ -x "$BIN_DIR/$service" ]] || die "no executable $BIN_DIR/$service"
    done
    [[ -d "$FIXTURES_DIR" ]] || die "no fixtures at $FIXTURES_DIR (set STACK_FIXTURES_DIR)"
}

# A directory under the stack's that system user $2 (postgres, nginx's workers) must reach when the stack runs as
# root; when a parent directory is closed to that user (a checkout under /root), one outside the project instead.
reachable_dir() { # name user
    local dir="$LOCAL_DIR/$1"
    mkdir -p "$dir"
    if is_root && ! runuser -u "$2" -- test -x "$dir" 2>/dev/null; then
        dir="/var/lib/favoriteme-stack/$(printf '%s' "$LOCAL_DIR" | sha256sum | cut -c1-12)/$1"
        mkdir -p "$dir"
        log_warn "$2 cannot reach $LOCAL_DIR/$1; using $dir instead" >&2
    fi
    printf '%s\n' "$dir"
}

# The values supervisord.conf reads (%(ENV_…)s), one KEY=VALUE a line; supervisord gets these and nothing else of
# this shell's environment, so no secret and nothing exported by chance reaches the processes.
supervisord_env() {
    local nginx pg_base pg_user
    nginx="$(nginx_bin)"
    pg_user="$(id -un)"
    if is_root; then pg_user=postgres; fi
    pg_base="$(reachable_dir postgres "$pg_user")"
    ensure_mail_server
    printf '%s\n' "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "HOME=${HOME:-/}" \
        "LANG=${LANG:-C.UTF-8}" "STACK_ROOT=$ROOT" "STACK_DIR=$LOCAL_DIR" "STACK_LOG_DIR=$LOG_DIR" \
        "STACK_RUN_DIR=$RUN_DIR" "STACK_BIN_DIR=$BIN_DIR" "STACK_REPLICAS=$REPLICAS" "STACK_PG_BIN=$PG_BIN" \
        "STACK_PG_DATA=$pg_base/data" "STACK_PG_SOCKET_DIR=$pg_base/run" "STACK_PG_PORT=$PG_PORT" \
        "STACK_PG_USER=$pg_user" "STACK_NGINX=$nginx" \
        "STACK_REPLAY_PORT=$REPLAY_PORT" "STACK_FIXTURES_DIR=$FIXTURES_DIR" "STACK_MAIL_PYTHON=$MAIL_PYTHON" \
        "STACK_SMTP_PORT=$SMTP_PORT"
}

# Starts supervisord unless it runs. It keeps the values it started with: a later `up` with others must restart.
start_supervisord() {
    local -a environment
    mapfile -t environment < <(supervisord_env)
    if supervisord_pid >/dev/null; then
        cmp -s "$RUN_DIR/supervisord.env" <(printf '%s\n' "${environment[@]}") \
            || die "the stack runs with other settings (STACK_*, or the build); run 'scripts/stack restart'"
        return 0
    fi
    printf '%s\n' "${environment[@]}" >"$RUN_DIR/supervisord.env"
    ensure_venv supervisor "$SUPERVISOR_REQUIREMENT"
    log_info "starting supervisord (log: ${LOG_DIR#"$ROOT"/}/supervisord.log)"
    env -i "${environment[@]}" "$VENV/bin/supervisord" -c "$ROOT/scripts/lib/stack/supervisord.conf" \
        </dev/null >>"$LOG_DIR/supervisord.log" 2>&1 9>&- || die "supervisord did not start; see $LOG_DIR/supervisord.log"
    local deadline=$((SECONDS + 20))
    until ctl pid >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "supervisord did not answer within 20 s; see $LOG_DIR/supervisord.log"
        sleep 0.2
    done
}

# Starts the named processes that are not running (supervisorctl waits until each has run a second); on a failure,
# shows the end of their logs.
ctl_start() { # name…
    local output
    output="$(ctl start "$@" 2>&1)" && return 0
    printf '%s\n' "$output" >&2
    grep -q 'ERROR' <<<"$output" || return 0
    tail -n 20 "$LOG_DIR"/*.log >&2
    die "could not start: $(grep ERROR <<<"$output" | tr '\n' ' ')"
}

# PostgreSQL: the cluster made once (initdb), the server started by supervisord, and the one SQL bootstrap
# (deploy/postgres/init.sql: database, roles, schemas, grants; safe to repeat) applied over its Unix socket with the
# passwords of stack.env, generated once (mode 600) and passed in the environment, never on a command line.
pg_up() {
    local data socket_dir
    data="$(sed -n 's/^STACK_PG_DATA=//p' "$RUN_DIR/supervisord.env")"
    socket_dir="$(sed -n 's/^STACK_PG_SOCKET_DIR=//p' "$RUN_DIR/supervisord.env")"
    local socket="$socket_dir/.s.PGSQL.$PG_PORT"
    ((${#socket} <= 107)) || die "socket path $socket is longer than 107 bytes; move the checkout to a shorter path"
    if [[ ! -f "$data/PG_VERSION" ]]; then
        log_info "initdb $data"
        mkdir -p "$data" "$socket_dir"
        is_root && chown -R postgres:postgres "$(dirname "$data")"
        as_postgres_owner "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C.UTF-8 --auth-local=trust \
            --auth-host=scram-sha-256 >>"$LOG_DIR/postgres.log" 2>&1 || die "initdb failed (log: $LOG_DIR/postgres.log)"
    fi
    ctl_start postgres
    local deadline=$((SECONDS + 60))
    until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; do
        ((SECONDS < deadline)) || die "PostgreSQL is not ready after 60 s (log: $LOG_DIR/postgres.log)"
        sleep 0.2
    done
    local service key
    local -a passwords=()
    (umask 077 && touch "$LOCAL_DIR/stack.env")
    for service in "${SERVICES[@]}"; do
        key="$(password_key "$service")"
        [[ -n "$(stack_secret "$key")" ]] || printf '%s=%s\n' "$key" "$(openssl rand -hex 24)" >>"$LOCAL_DIR/stack.env"
        passwords+=("$key=$(stack_secret "$key")")
    done
    log_info "bootstrapping database favoriteme (deploy/postgres/init.sql)"
    (export "${passwords[@]}" && as_postgres_owner "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$socket_dir" \
        -p "$PG_PORT" -U postgres -d postgres -f "$ROOT/deploy/postgres/init.sql") || die "the bootstrap failed"
}

password_key() { printf '%s_DB_PASSWORD\n' "${SERVICE_ROLE[$1]^^}"; } # service
stack_secret() { sed -n "s/^$1=//p" "$LOCAL_DIR/stack.env" | tail -n 1; } # KEY: read, never sourced

# .env.stack's KEY=VALUE lines (comments, blank lines, `export ` and one level of quotes allowed), parsed rather than
# sourced, so the file is plain data, like docker's env files.
USER_ENV=()
load_user_env() {
    local line number=0
    [[ -f "$USER_ENV_FILE" ]] || return 0
    while IFS= read -r line || [[ -n "$line" ]]; do
        number=$((number + 1))
        line="${line%$'\r'}"
        [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
        line="${line#export }"
        [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=([\"\']?)(.*)\2$ ]] \
            || { log_warn "$USER_ENV_FILE:$number: ignored (not KEY=VALUE)"; continue; }
        USER_ENV+=("${BASH_REMATCH[1]}=${BASH_REMATCH[3]}")
    done <"$USER_ENV_FILE"
    log_info "passing ${#USER_ENV[@]} variable(s) from ${USER_ENV_FILE#"$ROOT"/} to the services"
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
    fi
    if [[ "$service" == auth-service ]]; then
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
        (
            umask 077
            while IFS= read -r line; do printf '%s=%q\n' "${line%%=*}" "${line#*=}"; done < <(service_env "$service")
        ) >"$RUN_DIR/$service.env"
    done
}

# The phones and flash cards catalog-proxy serves from its own copy, loaded from the recordings at every `up`
# (idempotent), with the service's own environment and nothing else.
load_datasets() {
    local mobiles="$FIXTURES_DIR/mobiles" cards="$FIXTURES_DIR/flashcards" binary="$BIN_DIR/catalog-proxy"
    # shellcheck disable=SC2016  # expanded by the inner shell
    env -i /bin/bash -c 'set -a && . "$0" && "$1" load mobiles "$2" "$3" && "$1" load flashcards "$4"' \
        "$RUN_DIR/catalog-proxy.env" "$binary" "$mobiles/harshil64-mobiles-list.json" \
        "$mobiles/unidentified-repo-mobile-1-images.json" "$cards/bcecilio-cards-live.json" \
        >>"$LOG_DIR/datasets.log" 2>&1 </dev/null || die "loading the datasets failed; see $LOG_DIR/datasets.log"
    log_info "loaded the mobiles and flash cards datasets from $FIXTURES_DIR"
}

# Replicas (and replay-upstream) whose executable was rebuilt since they started (Linux marks it "(deleted)") are
# restarted one at a time, each serving again before the next goes, so the others keep serving.
replace_stale_replicas() {
    local name state rest pid port deadline
    while read -r name state rest; do
        [[ "$state" == RUNNING && "$rest" =~ pid\ ([0-9]+) ]] || continue
        pid="${BASH_REMATCH[1]}"
        [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == *" (deleted)" ]] || continue
        log_info "${name#*:} runs an older build; restarting it"
        ctl restart "$name" >/dev/null || die "could not restart ${name#*:}"
        [[ "$name" == replay-upstream ]] && continue
        port="$(replica_port "${name%%:*}" "${name##*-}")" deadline=$((SECONDS + 30))
        until [[ "$(http_code "http://127.0.0.1:$port/health/live")" == 200 ]]; do
            ((SECONDS < deadline)) || die "${name#*:} did not come back within 30 s; see $LOG_DIR/${name#*:}.log"
            sleep 0.2
        done
    done < <(ctl status "${SERVICES[@]/%/:*}" replay-upstream)
}

# The gateway's config: deploy/nginx/gateway.conf.template with this stack's values (envsubst replaces only the
# GATEWAY_* names, so nginx's own $variables stay), checked with `nginx -t` before it replaces the running one, which
# is then reloaded (SIGHUP) only when it changed: a reload closes the workers' idle client connections.
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
    if ctl status gateway | grep -q RUNNING; then
        ((changed == 0)) || { log_info "reloading the gateway"; ctl signal HUP gateway >/dev/null; }
    else
        ctl_start gateway
    fi
}

# Ready: every replica answers /health/ready on its own port (a replica started a moment ago must serve before `up`
# returns, or a rolling restart that stops the next one would leave none), then every service through the gateway.
wait_until_ready() {
    local deadline=$((SECONDS + WAIT_SECONDS)) service n url pending
    local -a urls=()
    for service in "${SERVICES[@]}"; do
        for ((n = 1; n <= REPLICAS; n++)); do urls+=("http://127.0.0.1:$(replica_port "$service" "$n")/health/ready"); done
        urls+=("http://127.0.0.1:$GATEWAY_PORT/v1/${SERVICE_ROUTE[$service]}/health/ready")
    done
    log_info "waiting up to ${WAIT_SECONDS}s for the services to become ready"
    while :; do
        pending=""
        for url in "${urls[@]}"; do
            [[ "$(http_code "$url")" == 200 ]] || { pending="$url"; break; }
        done
        [[ -z "$pending" ]] && return 0
        if ((SECONDS >= deadline)); then
            tail -n 20 "$LOG_DIR"/*-service-*.log "$LOG_DIR"/catalog-proxy-*.log "$LOG_DIR/gateway-error.log" >&2 || true
            die "not ready after ${WAIT_SECONDS}s: $pending answers $(http_code "$pending") ('scripts/stack status')"
        fi
        sleep 0.1
    done
}

print_summary() {
    local service n gw="http://localhost:$GATEWAY_PORT"
    printf '\nFavoriteMe stack is up.\n\n  gateway     %s\n' "$gw"
    if [[ "$SKIP_SERVICES" != 1 ]]; then
        for service in "${SERVICES[@]}"; do
            for ((n = 1; n <= REPLICAS; n++)); do
                printf '  %-19s http://127.0.0.1:%s\n' "$service-$n" "$(replica_port "$service" "$n")"
            done
        done
        printf '  replay      http://127.0.0.1:%s (recorded upstream data)\n' "$REPLAY_PORT"
        printf '  mail        smtp://127.0.0.1:%s; every mail sent is a file in %s/mail/new\n' "$SMTP_PORT" "$LOCAL_DIR"
    fi
    printf '  postgres    postgresql://127.0.0.1:%s/favoriteme (passwords in %s/stack.env)\n' "$PG_PORT" "$LOCAL_DIR"
    printf '\nTry:\n  curl -s %s/v1/auth/health/ready\n  curl -s %s/v1/catalog/experiences\n\n' "$gw" "$gw"
    printf 'Logs: scripts/stack logs [name]   Status: scripts/stack status   Stop: scripts/stack down\n'
}
