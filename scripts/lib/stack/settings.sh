# shellcheck shell=bash
# shellcheck disable=SC2034  # the settings are read by scripts/stack and parts.sh
# scripts/stack's settings (STACK_* in the environment, described at the top of scripts/stack), where the stack keeps
# its state, the services of deploy/services.txt, and the small helpers every command uses. Sourced by scripts/stack,
# after scripts/lib/common.sh.

ROOT="$(project_root)"
LOCAL_DIR="$(realpath -m "${STACK_DIR:-$ROOT/.local}")"
LOG_DIR="$LOCAL_DIR/logs"
RUN_DIR="$LOCAL_DIR/run"
USER_ENV_FILE="$(realpath -m "${STACK_USER_ENV_FILE:-$ROOT/.env.stack}")"
SUPERVISOR_REQUIREMENT="supervisor==4.3.0"

BUILD_CONFIG="${STACK_BUILD:-debug}"
REPLICAS="${STACK_REPLICAS:-2}"
# Every fixed port here lies below Linux's ephemeral range (32768-60999): a port in it can be taken at any moment by
# an outgoing connection or a test's throwaway cluster, and PostgreSQL then fails to bind.
PG_PORT="${STACK_PG_PORT:-15432}"
GATEWAY_PORT="${STACK_GATEWAY_PORT:-8080}"
PEER_PORT="${STACK_PEER_PORT:-8070}"
WAIT_SECONDS="${STACK_WAIT_SECONDS:-60}"
SKIP_SERVICES="${STACK_SKIP_SERVICES:-0}"
REPLAY_PORT="${STACK_REPLAY_PORT:-8090}"
SMTP_PORT="${STACK_SMTP_PORT:-1025}"
PORT_OFFSET="${STACK_PORT_OFFSET:-0}"
SIGNIN_RATE="${STACK_SIGNIN_RATE:-10r/s}"
SIGNIN_BURST="${STACK_SIGNIN_BURST:-20}"
FIXTURES_DIR="$(realpath -m "${STACK_FIXTURES_DIR:-$ROOT/../shared/fixtures}")"
BIN_DIR="${STACK_BIN_DIR:-$ROOT/.build/$BUILD_CONFIG}"

# Per-service facts (deploy/services.txt, shared with scripts/validate-deploy): database role, gateway route, and the
# port base of the replicas.
SERVICES=()
declare -A SERVICE_ROLE=() SERVICE_ROUTE=() SERVICE_PORT_BASE=()
while read -r name role _ route _ base; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    SERVICES+=("$name") SERVICE_ROLE[$name]="$role" SERVICE_ROUTE[$name]="$route" SERVICE_PORT_BASE[$name]="$base"
done <"$ROOT/deploy/services.txt"
unset name role route base

replica_port() { echo $((SERVICE_PORT_BASE[$1] + PORT_OFFSET + $2)); } # service replica-number

validate_settings() {
    [[ "$REPLICAS" =~ ^[1-9][0-9]?$ ]] || die "STACK_REPLICAS must be 1…99 (ports are 8101…8199 etc.), got '$REPLICAS'"
    local name
    for name in PG_PORT GATEWAY_PORT PEER_PORT REPLAY_PORT SMTP_PORT PORT_OFFSET WAIT_SECONDS SIGNIN_BURST; do
        [[ "${!name}" =~ ^[0-9]+$ ]] || die "STACK_$name must be a number, got '${!name}'"
    done
    ((PORT_OFFSET <= 50000)) || die "STACK_PORT_OFFSET must be a number up to 50000, got '$PORT_OFFSET'"
    [[ "$PEER_PORT" != "$GATEWAY_PORT" ]] || die "STACK_PEER_PORT and STACK_GATEWAY_PORT must differ"
    [[ "$SIGNIN_RATE" =~ ^[1-9][0-9]*r/[sm]$ ]] || die "STACK_SIGNIN_RATE must be like 10r/s, got '$SIGNIN_RATE'"
    case "$BUILD_CONFIG" in debug | release) ;; *) die "STACK_BUILD must be debug or release, got '$BUILD_CONFIG'" ;; esac
}

# Every process of the stack, in the order `status` lists them when supervisord is not running.
process_names() {
    local service n
    printf '%s\n' postgres gateway mail-server replay-upstream
    for service in "${SERVICES[@]}"; do
        for ((n = 1; n <= REPLICAS; n++)); do echo "$service-$n"; done
    done
}

# HTTP status code of a GET of URL $1 (000 when nothing answers), for health checks and the status table.
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true; }

# Serialises up/down/restart: two concurrent `up`s would race on initdb and on starting supervisord, which is
# started with `9>&-` so that it does not hold the lock for its lifetime.
take_lock() {
    mkdir -p "$RUN_DIR" "$LOG_DIR"
    [[ -w "$RUN_DIR" && -w "$LOG_DIR" ]] || die "$LOCAL_DIR is not writable by $(id -un); fix its ownership first"
    exec 9>"$RUN_DIR/stack.lock"
    flock -n 9 || die "another scripts/stack command is running (lock: $RUN_DIR/stack.lock)"
}

# supervisorctl on this stack's socket (only the [supervisorctl] section of the config is read, so no other value is
# needed here).
ctl() {
    ensure_venv supervisor "$SUPERVISOR_REQUIREMENT"
    STACK_RUN_DIR="$RUN_DIR" "$VENV/bin/supervisorctl" -c "$ROOT/scripts/lib/stack/supervisord.conf" "$@"
}

# Prints supervisord's pid while it runs.
supervisord_pid() {
    local pid
    pid="$(cat "$RUN_DIR/supervisord.pid" 2>/dev/null)" && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}
