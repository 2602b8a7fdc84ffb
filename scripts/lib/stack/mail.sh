# shellcheck shell=bash
# The stack's mail server (sourced by scripts/stack): a real SMTP server on loopback (scripts/mail-server.py, on PyPI's
# aiosmtpd) that keeps every mail auth-service sends in a Maildir, where a developer reads it and the end-to-end tests
# follow its links. Services send to it unless .env.stack points SMTP_HOST elsewhere.

MAIL_DIR="$LOCAL_DIR/mail"

mail_env() {
    user_env_has SMTP_HOST || printf '%s\n' "SMTP_HOST=127.0.0.1" "SMTP_PORT=$SMTP_PORT"
    user_env_has PUBLIC_BASE_URL || printf '%s\n' "PUBLIC_BASE_URL=http://localhost:$GATEWAY_PORT"
}

start_mail_server() {
    local pidfile="$RUN_DIR/mail-server.pid" log="$LOG_DIR/mail-server.log" pid
    user_env_has SMTP_HOST && return 0
    if pid="$(live_pid "$pidfile" mail-server)"; then
        log_info "mail-server already running (pid $pid)"
        return 0
    fi
    ensure_mail_server
    port_in_use "$SMTP_PORT" && die "port $SMTP_PORT (mail-server) is taken; set STACK_SMTP_PORT"
    (cd "$ROOT" && exec setsid nohup "$MAIL_PYTHON" "$ROOT/scripts/mail-server.py" --port "$SMTP_PORT" \
        --maildir "$MAIL_DIR") >>"$log" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid" >"$pidfile"
    local deadline=$((SECONDS + 20))
    until port_in_use "$SMTP_PORT"; do
        ((SECONDS < deadline)) || die "mail-server did not start; see ${log#"$ROOT"/}"
        kill -0 "$pid" 2>/dev/null || die "mail-server exited at start; see ${log#"$ROOT"/}"
        sleep 0.2
    done
    log_info "started mail-server (pid $pid, smtp port $SMTP_PORT): mails land in ${MAIL_DIR#"$ROOT"/}/new"
}
