# shellcheck shell=bash
# Process helpers of scripts/stack (sourced by it): ports, pid files, health codes, waiting for an exit, and the lock
# that serialises its commands.

# Succeeds when something accepts TCP connections on 127.0.0.1:$1 (bash's /dev/tcp; no extra tool needed).
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prints the pid recorded in pid file $1 if that process is alive and its command line mentions $2. The name check
# guards against a stale pid file whose number now belongs to an unrelated process.
live_pid() {
    local pidfile="$1" name="$2" pid cmdline
    [[ -s "$pidfile" ]] || return 1
    pid="$(head -n 1 "$pidfile")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    process_alive "$pid" || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
    [[ "$cmdline" == *"$name"* ]] || return 1
    printf '%s\n' "$pid"
}

# HTTP status code of a GET of URL $1 (000 when nothing answers), for health checks and the status table.
http_code() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true
}

# Succeeds while process $1 exists and is not a zombie (an exited child its new parent has not reaped yet counts as
# gone; some container inits reap slowly).
process_alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)"
    [[ "$state" != Z ]]
}

# Waits up to $2 seconds for process $1 to exit.
wait_for_exit() {
    local pid="$1" deadline=$((SECONDS + $2))
    while process_alive "$pid"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# Serialises up/down/restart: two concurrent `up`s would race on initdb and pid files. Long-lived children (postgres,
# nginx, services) are started with `9>&-`; otherwise they would inherit the lock and hold it for their lifetime.
take_lock() {
    mkdir -p "$RUN_DIR"
    exec 9>"$RUN_DIR/stack.lock"
    flock -n 9 || die "another scripts/stack command is running (lock: $RUN_DIR/stack.lock)"
}

# Succeeds when process $1 runs an executable that has since been replaced on disk (Linux marks it "(deleted)").
runs_stale_binary() {
    local exe
    exe="$(readlink "/proc/$1/exe" 2>/dev/null)" || return 1
    [[ "$exe" == *" (deleted)" ]]
}
