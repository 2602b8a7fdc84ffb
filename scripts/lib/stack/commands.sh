# shellcheck shell=bash
# The commands of scripts/stack (sourced by it): up, down, status and logs, and the summary `up` ends with.

print_summary() {
    local service n gw="http://localhost:$GATEWAY_PORT"
    printf '\nFavoriteMe stack is up.\n\n'
    printf '  gateway     %s\n' "$gw"
    if [[ "$SKIP_SERVICES" != 1 ]]; then
        for service in "${SERVICES[@]}"; do
            for ((n = 1; n <= REPLICAS; n++)); do
                printf '  %-19s http://127.0.0.1:%s\n' "$service-$n" "$(replica_port "$service" "$n")"
            done
        done
    else
        printf '  (services skipped: STACK_SKIP_SERVICES=1)\n'
    fi
    printf '  postgres    postgresql://127.0.0.1:%s/%s (passwords in %s)\n' "$PG_PORT" "$DATABASE_NAME" \
        "${STACK_ENV_FILE#"$ROOT"/}"
    if [[ -f "$RUN_DIR/replay-upstream.pid" ]]; then
        printf '  replay      http://127.0.0.1:%s (recorded upstream data)\n' "$REPLAY_PORT"
    fi
    if [[ -f "$RUN_DIR/mail-server.pid" ]]; then
        printf '  mail        smtp://127.0.0.1:%s; every mail sent is a file in %s/new\n' "$SMTP_PORT" \
            "${MAIL_DIR#"$ROOT"/}"
    fi
    printf '\nTry:\n  curl -s %s/v1/auth/health/ready\n  curl -s %s/v1/catalog/experiences\n\n' "$gw" "$gw"
    printf 'Logs: scripts/stack logs [name]   Status: scripts/stack status   Stop: scripts/stack down\n'
}

cmd_up() {
    validate_settings
    ensure_local_dirs
    take_lock
    ensure_packages libpq-dev postgresql-15 nginx curl python3-venv
    if [[ "$SKIP_SERVICES" != 1 ]]; then
        build_services # before anything starts: a compile error should not leave half a stack running
    fi
    pg_up
    if [[ "$SKIP_SERVICES" != 1 ]]; then
        start_services
    else
        log_warn "STACK_SKIP_SERVICES=1: not building or starting services"
    fi
    gateway_up
    if [[ "$SKIP_SERVICES" != 1 ]]; then
        wait_until_ready
    fi
    print_summary
}

cmd_down() {
    ensure_local_dirs
    take_lock
    stop_services
    gateway_down
    pg_down
    log_info "stack stopped (data kept in ${PG_BASE:-$LOCAL_DIR/postgres})"
}

# Replica numbers to show for a service: the configured ones plus any leftover pid files.
replica_numbers() { # service
    local service="$1" n pidfile
    {
        for ((n = 1; n <= REPLICAS; n++)); do echo "$n"; done
        for pidfile in "$RUN_DIR/$service"-*.pid; do
            [[ -f "$pidfile" ]] || continue
            n="$(basename "$pidfile" .pid)"
            echo "${n##*-}"
        done
    } | sort -nu
}

status_row() { printf '%-22s %-8s %-8s %-6s %s\n' "$@"; } # name state pid port health

cmd_status() {
    validate_settings
    local service route n pid state port health
    status_row NAME STATE PID PORT HEALTH

    resolve_pg_layout find
    if [[ -x "$PG_BIN/pg_ctl" ]] && pg_is_running; then
        pid="$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || echo '?')"
        health="$("$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && echo accepting || echo not-accepting)"
        status_row postgres running "$pid" "$PG_PORT" "$health"
    else
        status_row postgres stopped - "$PG_PORT" -
    fi

    if pid="$(live_pid "$NGINX_PID_FILE" nginx)"; then
        health=""
        for service in "${SERVICES[@]}"; do
            route="$(service_route "$service")"
            health+="$route=$(http_code "http://127.0.0.1:$GATEWAY_PORT/v1/$route/health/ready") "
        done
        status_row gateway running "$pid" "$GATEWAY_PORT" "$health"
    else
        status_row gateway stopped - "$GATEWAY_PORT" -
    fi

    if pid="$(live_pid "$RUN_DIR/mail-server.pid" mail-server)"; then
        status_row mail-server running "$pid" "$SMTP_PORT" "mails in ${MAIL_DIR#"$ROOT"/}/new"
    else
        status_row mail-server stopped - "$SMTP_PORT" -
    fi

    for service in "${SERVICES[@]}"; do
        while read -r n; do
            port="$(replica_port "$service" "$n")"
            if pid="$(live_pid "$RUN_DIR/$service-$n.pid" "$service")"; then
                state=running
                health="ready=$(http_code "http://127.0.0.1:$port/health/ready")"
            else
                state=stopped pid=- health=-
            fi
            status_row "$service-$n" "$state" "$pid" "$port" "$health"
        done < <(replica_numbers "$service")
    done
}

cmd_logs() { # [name]
    local name="${1:-}"
    local -a files=()
    shopt -s nullglob
    case "$name" in
        "") files=("$LOG_DIR"/*.log) ;;
        gateway | nginx) files=("$LOG_DIR"/gateway-*.log) ;;
        postgres)
            resolve_pg_layout find
            files=("$PG_LOG")
            ;;
        *)
            if [[ -f "$LOG_DIR/$name.log" ]]; then
                files=("$LOG_DIR/$name.log")
            else
                files=("$LOG_DIR/$name"-*.log)
            fi
            ;;
    esac
    shopt -u nullglob
    [[ ${#files[@]} -gt 0 ]] || die "no logs for '${name:-anything}' in $LOG_DIR"
    exec tail -n 100 -F "${files[@]}"
}
