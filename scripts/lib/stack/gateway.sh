# shellcheck shell=bash
# The gateway of scripts/stack (sourced by it): nginx on 127.0.0.1, with the config deploy/nginx/render makes of
# deploy/nginx/gateway.conf.in at every `up`, reloaded only when that changed.

NGINX_PID_FILE="$RUN_DIR/nginx.pid"
NGINX_CONF="$NGINX_DIR/nginx.conf"

# The user nginx's workers switch to when the master runs as root: the compiled-in default, as we set no `user`.
nginx_worker_user() {
    local user
    user="$("$NGINX" -V 2>&1 | sed -n 's/.*--user=\([^ ]*\).*/\1/p')"
    printf '%s\n' "${user:-nobody}"
}

# Sets NGINX_TEMP_DIR. Workers write request bodies and large responses there, so as root it must be reachable by
# the worker user; when the project path is closed to that user it moves out of the project (nginx itself creates
# the subdirectories and hands them to the worker user).
resolve_nginx_temp_dir() {
    NGINX_TEMP_DIR="$NGINX_DIR/tmp"
    is_root || return 0
    local user
    user="$(nginx_worker_user)"
    if ! runuser -u "$user" -- test -x "$NGINX_TEMP_DIR" 2>/dev/null; then
        NGINX_TEMP_DIR="$(fallback_dir)/nginx-tmp"
        mkdir -p "$NGINX_TEMP_DIR"
        log_warn "nginx workers ($user) cannot reach $NGINX_DIR/tmp; using $NGINX_TEMP_DIR for temp files"
    fi
}

# nginx with our prefix and config; -e so even errors before the config is read land in our log.
nginx_cmd() { # nginx-argument…
    "$NGINX" -p "$NGINX_DIR/" -e "$LOG_DIR/gateway-error.log" "$@"
}

# Renders the gateway's config (deploy/nginx/gateway.conf.in, target local: listening on 127.0.0.1, one upstream
# server per replica) to a temporary file, validates it with `nginx -t`, and only then replaces nginx.conf, so a
# broken config never reaches a running gateway.
render_gateway_config() {
    local candidate="$NGINX_DIR/nginx.conf.new" service n addresses
    local -a upstreams=()
    for service in "${SERVICES[@]}"; do
        addresses=""
        for ((n = 1; n <= REPLICAS; n++)); do
            addresses+="${addresses:+,}127.0.0.1:$(replica_port "$service" "$n")"
        done
        upstreams+=("$service=$addresses")
    done
    "$RENDER_GATEWAY" local PID_FILE="$NGINX_PID_FILE" ERROR_LOG="$LOG_DIR/gateway-error.log" \
        ACCESS_LOG="$LOG_DIR/gateway-access.log" TEMP_DIR="$NGINX_TEMP_DIR" LISTEN_PORT="$GATEWAY_PORT" \
        PEER_PORT="$PEER_PORT" SIGNIN_RATE="$SIGNIN_RATE" SIGNIN_BURST="$SIGNIN_BURST" "${upstreams[@]}" >"$candidate" \
        || die "rendering the gateway config failed (deploy/nginx/render)"
    local output
    if ! output="$(nginx_cmd -t -q -c "$candidate" 2>&1)"; then
        printf '%s\n' "$output" >&2
        die "the rendered gateway config does not validate ($candidate)"
    fi
    if cmp -s "$candidate" "$NGINX_CONF"; then
        rm -f "$candidate"
        GATEWAY_CONFIG_CHANGED=0
        return 0
    fi
    mv -f "$candidate" "$NGINX_CONF"
    GATEWAY_CONFIG_CHANGED=1
    log_info "gateway config rendered and validated: ${NGINX_CONF#"$ROOT"/}"
}

gateway_up() {
    NGINX="$(nginx_bin)"
    resolve_nginx_temp_dir
    render_gateway_config
    local pid
    if pid="$(live_pid "$NGINX_PID_FILE" nginx)"; then
        # A reload replaces the workers, which close their idle client connections: only when something changed
        # (a rolling restart of the services must not disturb the clients of the gateway).
        if ((GATEWAY_CONFIG_CHANGED)); then
            log_info "reloading the gateway (pid $pid)"
            nginx_cmd -c nginx.conf -s reload
        fi
        return 0
    fi
    port_in_use "$GATEWAY_PORT" && die "port $GATEWAY_PORT is taken by another process; set STACK_GATEWAY_PORT"
    port_in_use "$PEER_PORT" && die "port $PEER_PORT is taken by another process; set STACK_PEER_PORT"
    log_info "starting the gateway on 127.0.0.1:$GATEWAY_PORT"
    nginx_cmd -c nginx.conf 9>&- || { tail -n 20 "$LOG_DIR/gateway-error.log" >&2; die "nginx did not start"; }
}

gateway_down() {
    local pid
    if pid="$(live_pid "$NGINX_PID_FILE" nginx)"; then
        log_info "stopping the gateway (pid $pid)"
        kill -TERM "$pid"
        if ! wait_for_exit "$pid" 10; then
            log_warn "nginx did not stop within 10s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$NGINX_PID_FILE"
}
