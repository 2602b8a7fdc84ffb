# shellcheck shell=bash
# The services of scripts/stack (sourced by it): building them (or taking STACK_BIN_DIR's), their environment
# (.env.stack), starting the replicas, waiting until they are ready, stopping them.

BIN_DIR="" # where the services' executables are: set by build_services

build_services() {
    if [[ -n "${STACK_BIN_DIR:-}" ]]; then
        BIN_DIR="$STACK_BIN_DIR"
        log_info "using prebuilt binaries from $BIN_DIR (STACK_BIN_DIR)"
    else
        ensure_swift
        # Every product in one build (the services, replay-upstream, favme): the build the tests use, in debug.
        log_info "scripts/build -c $BUILD_CONFIG"
        "$ROOT/scripts/build" -c "$BUILD_CONFIG" || die "the build failed"
        BIN_DIR="$ROOT/.build/$BUILD_CONFIG"
    fi
    for service in "${SERVICES[@]}" replay-upstream; do
        [[ -x "$BIN_DIR/$service" ]] || die "no executable $BIN_DIR/$service"
    done
}

# Environment from .env.stack as KEY=VALUE words in USER_ENV: `#` comments, blank lines and an `export ` prefix
# allowed, one level of matching quotes stripped. Parsed rather than sourced, so the file is plain data, like docker's
# env files. Read once per run (not per replica) so its warnings appear once.
USER_ENV=()
load_user_env() {
    USER_ENV=()
    [[ -f "$USER_ENV_FILE" ]] || return 0
    local line key value number=0
    while IFS= read -r line || [[ -n "$line" ]]; do
        number=$((number + 1))
        line="${line%$'\r'}"
        [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
        line="${line#export }"
        if [[ ! "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
            log_warn "$USER_ENV_FILE:$number: ignored (not KEY=VALUE)"
            continue
        fi
        key="${BASH_REMATCH[1]}"
        value="${BASH_REMATCH[2]}"
        if [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]]; then
            value="${BASH_REMATCH[1]}"
        fi
        USER_ENV+=("$key=$value")
    done <"$USER_ENV_FILE"
    log_info "passing ${#USER_ENV[@]} variable(s) from ${USER_ENV_FILE#"$ROOT"/} to the services"
}

# The complete environment of replica $2 of service $1, one KEY=VALUE per line. Services start from a clean
# environment (whatever happens to be exported in the caller's shell does not leak in); .env.stack comes after our
# defaults so it can override them, except HTTP_HOST/HTTP_PORT, which define the replica and always come last.
service_env() {
    local service="$1" n="$2" role password
    role="$(service_role "$service")"
    password="$(stack_secret "$(password_key "$service")")"
    printf '%s\n' \
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        "HOME=${HOME:-/}" \
        "LANG=${LANG:-C.UTF-8}" \
        "DATABASE_URL=postgresql://$role:$password@127.0.0.1:$PG_PORT/$DATABASE_NAME" \
        "AUTH_URL=http://127.0.0.1:$PEER_PORT" \
        "CATALOG_URL=http://127.0.0.1:$PEER_PORT" \
        "LOG_FORMAT=json" \
        "LOG_LEVEL=${LOG_LEVEL:-info}"
    if [[ "$service" == catalog-proxy ]]; then replay_env; fi
    if [[ "$service" == auth-service ]]; then mail_env; fi
    if ((${#USER_ENV[@]})); then printf '%s\n' "${USER_ENV[@]}"; fi
    printf '%s\n' "HTTP_HOST=127.0.0.1" "HTTP_PORT=$(replica_port "$service" "$n")"
}

# In a subshell about to run a service: empties the environment and exports only the KEY=VALUE words given (a
# service's own, from service_env).
only_env() { # KEY=VALUE…
    local exported
    local -a words=("$@")
    while read -r exported; do unset "$exported" 2>/dev/null || true; done < <(compgen -e)
    export "${words[@]}"
}

start_replica() { # service replica-number
    local service="$1" n="$2" name="$1-$2" port pidfile log pid replacing=0
    port="$(replica_port "$service" "$n")"
    pidfile="$RUN_DIR/$name.pid"
    log="$LOG_DIR/$name.log"
    if pid="$(live_pid "$pidfile" "$service")"; then
        if ! runs_stale_binary "$pid"; then
            log_info "$name already running (pid $pid, port $port)"
            return 0
        fi
        # Rebuilt since it started: replace it (one replica at a time, so the other keeps serving).
        log_info "$name runs an older build; restarting it"
        kill -TERM "$pid" 2>/dev/null || true
        wait_for_exit "$pid" 30 || { kill -KILL "$pid" 2>/dev/null || true; wait_for_exit "$pid" 5 || true; }
        rm -f "$pidfile"
        replacing=1
    fi
    port_in_use "$port" && die "port $port (for $name) is taken by another process; stop it first"

    local -a env_words=()
    mapfile -t env_words < <(service_env "$service" "$n")
    printf '\n=== %s starting %s on 127.0.0.1:%s ===\n' "$(date -Is)" "$name" "$port" >>"$log"
    # setsid + nohup: own session, immune to the terminal's hangup, so replicas outlive this script. The subshell is
    # not a process-group leader, so setsid does not fork and $! is the service's own pid (exec all the way down).
    # The environment is emptied and set inside the subshell, not passed as `env -i NAME=value …` arguments: the
    # database password and API keys would show in the process list (readable by every local user) until env execs.
    (
        cd "$ROOT" || exit 1
        binary="$BIN_DIR/$service"  # before the exported variables go (BIN_DIR may be one of them)
        only_env "${env_words[@]}"
        exec /usr/bin/setsid /usr/bin/nohup "$binary"
    ) >>"$log" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid" >"$pidfile"
    log_info "started $name (pid $pid, port $port, log ${log#"$ROOT"/})"
    if ((replacing)); then
        # Rolling: the next replica is only replaced once this one serves again.
        local deadline=$((SECONDS + 30))
        until curl -fsS -o /dev/null "http://127.0.0.1:$port/health/live" 2>/dev/null; do
            ((SECONDS < deadline)) || die "$name did not come back within 30s; see ${log#"$ROOT"/}"
            kill -0 "$pid" 2>/dev/null || die "$name exited at start; see ${log#"$ROOT"/}"
            sleep 0.2
        done
    fi
}

start_services() {
    local service n
    load_user_env
    if needs_replay; then start_replay; fi
    start_mail_server
    load_datasets
    for service in "${SERVICES[@]}"; do
        for ((n = 1; n <= REPLICAS; n++)); do
            start_replica "$service" "$n"
        done
    done
}

# Succeeds while at least one replica of service $1 is alive; lets the health wait fail fast on a crash at startup.
any_replica_alive() {
    local n
    for ((n = 1; n <= REPLICAS; n++)); do
        live_pid "$RUN_DIR/$1-$n.pid" "$1" >/dev/null && return 0
    done
    return 1
}

print_service_logs() {
    local log service
    local -a logs=()
    for service in "${SERVICES[@]}"; do logs+=("$LOG_DIR/$service"-*.log); done
    for log in "${logs[@]}" "$LOG_DIR/gateway-error.log"; do
        [[ -f "$log" ]] || continue
        printf '\n----- last 20 lines of %s -----\n' "${log#"$ROOT"/}" >&2
        tail -n 20 "$log" >&2
    done
}

# 200 when every replica of the service in the gateway (1…STACK_REPLICAS) answers /health/ready on its own port,
# otherwise the first other answer ("replica-N:code").
replicas_ready() { # service
    local n code
    for ((n = 1; n <= REPLICAS; n++)); do
        code="$(http_code "http://127.0.0.1:$(replica_port "$1" "$n")/health/ready")"
        [[ "$code" == 200 ]] || { echo "replica-$n:$code"; return 0; }
    done
    echo 200
}

# Ready means answering 200 on /v1/<route>/health/ready through the gateway, i.e. nginx, routing and at least one
# replica all work.
wait_until_ready() {
    local deadline=$((SECONDS + WAIT_SECONDS)) service route code all_ready summary
    local -A ready=() last_code=()
    log_info "waiting up to ${WAIT_SECONDS}s for the services to become ready"
    while true; do
        all_ready=1
        for service in "${SERVICES[@]}"; do
            [[ -n "${ready[$service]:-}" ]] && continue
            route="$(service_route "$service")"
            # Every replica on its own port, then the route through the gateway: a replica started a moment ago must
            # be serving before `up` returns, or a rolling restart that stops the next one would leave none.
            code="$(replicas_ready "$service")"
            [[ "$code" == 200 ]] && code="$(http_code "http://127.0.0.1:$GATEWAY_PORT/v1/$route/health/ready")"
            last_code[$service]="$code"
            if [[ "$code" == 200 ]]; then
                ready[$service]=1
                log_info "$service is ready"
                continue
            fi
            all_ready=0
            if ! any_replica_alive "$service"; then
                print_service_logs
                die "every $service replica has exited; see the logs above"
            fi
        done
        ((all_ready)) && return 0
        if ((SECONDS >= deadline)); then
            print_service_logs
            summary=""
            for service in "${SERVICES[@]}"; do
                [[ -n "${ready[$service]:-}" ]] || summary+=" /v1/$(service_route "$service")/health/ready=${last_code[$service]}"
            done
            die "not ready after ${WAIT_SECONDS}s:$summary (logs above; 'scripts/stack status' for details)"
        fi
        sleep 0.1
    done
}

# Sends SIGTERM to every replica's process group, waits up to 30 s (longer than the services' own 25 s drain limit,
# SHUTDOWN_TIMEOUT_SECONDS) for all of them, then SIGKILLs the rest.
stop_services() {
    local pidfile name pid service
    local -a pids=() pidfiles=()
    shopt -s nullglob
    for service in "${SERVICES[@]}"; do pidfiles+=("$RUN_DIR/$service"-*.pid); done
    for pidfile in "${pidfiles[@]}" "$RUN_DIR"/replay-upstream.pid "$RUN_DIR"/mail-server.pid; do
        name="$(basename "$pidfile" .pid)"
        [[ "$name" == replay-upstream || "$name" == mail-server ]] && name="$name-0"
        if pid="$(live_pid "$pidfile" "${name%-*}")"; then
            log_info "stopping $name (pid $pid)"
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
        rm -f "$pidfile"
    done
    shopt -u nullglob
    local deadline=$((SECONDS + 30))
    for pid in "${pids[@]}"; do
        wait_for_exit "$pid" $((deadline > SECONDS ? deadline - SECONDS : 0)) && continue
        log_warn "pid $pid did not stop within 30s; sending SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        wait_for_exit "$pid" 5 || log_warn "pid $pid is still alive"
    done
}
