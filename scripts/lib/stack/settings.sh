# shellcheck shell=bash
# shellcheck disable=SC2034  # the settings are read by scripts/stack and parts.sh
# scripts/stack's settings (STACK_*, docs/operations.md#running-locally), the services of deploy/services.txt, and the
# helpers every command uses. Sourced by scripts/stack, after scripts/lib/common.sh.

ROOT="$(project_root)"
LOCAL_DIR="$(realpath -m "${STACK_DIR:-$ROOT/.local}")"
LOG_DIR="$LOCAL_DIR/logs"
RUN_DIR="$LOCAL_DIR/run"
USER_ENV_FILE="$(realpath -m "${STACK_USER_ENV_FILE:-$ROOT/.env.stack}")"
FIXTURES_DIR="$(realpath -m "${STACK_FIXTURES_DIR:-$ROOT/../shared/fixtures}")"
BUILD_CONFIG="${STACK_BUILD:-debug}"
BIN_DIR="${STACK_BIN_DIR:-$ROOT/.build/$BUILD_CONFIG}"
REPLICAS="${STACK_REPLICAS:-2}"
SKIP_SERVICES="${STACK_SKIP_SERVICES:-0}"
WAIT_SECONDS="${STACK_WAIT_SECONDS:-60}"
# Ports below Linux's ephemeral range (32768-60999), where an outgoing connection or a test's throwaway cluster can
# take one at any moment.
PG_PORT="${STACK_PG_PORT:-15432}"
GATEWAY_PORT="${STACK_GATEWAY_PORT:-8080}"
PEER_PORT="${STACK_PEER_PORT:-8070}"
REPLAY_PORT="${STACK_REPLAY_PORT:-8090}"
SMTP_PORT="${STACK_SMTP_PORT:-1025}"
PORT_OFFSET="${STACK_PORT_OFFSET:-0}"
SIGNIN_RATE="${STACK_SIGNIN_RATE:-10r/s}"
SIGNIN_BURST="${STACK_SIGNIN_BURST:-20}"
SUPERVISOR_REQUIREMENT="supervisor==4.3.0"

# Per service (deploy/services.txt, shared with scripts/validate-deploy): database role, gateway route, port base.
SERVICES=()
declare -A SERVICE_ROLE=() SERVICE_ROUTE=() SERVICE_PORT_BASE=()
while read -r name role _ route _ base; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    SERVICES+=("$name") SERVICE_ROLE[$name]="$role" SERVICE_ROUTE[$name]="$route" SERVICE_PORT_BASE[$name]="$base"
done <"$ROOT/deploy/services.txt"
unset name role route base

replica_port() { echo $((SERVICE_PORT_BASE[$1] + PORT_OFFSET + $2)); } # service replica-number

validate_settings() {
    local name
    [[ "$REPLICAS" =~ ^[1-9][0-9]?$ ]] || die "STACK_REPLICAS must be 1…99, got '$REPLICAS'"
    for name in PG_PORT GATEWAY_PORT PEER_PORT REPLAY_PORT SMTP_PORT PORT_OFFSET WAIT_SECONDS SIGNIN_BURST; do
        [[ "${!name}" =~ ^[0-9]{1,5}$ ]] || die "STACK_$name must be a number, got '${!name}'"
    done
    ((PORT_OFFSET <= 50000)) || die "STACK_PORT_OFFSET must be up to 50000, got '$PORT_OFFSET'"
    [[ "$PEER_PORT" != "$GATEWAY_PORT" ]] || die "STACK_PEER_PORT and STACK_GATEWAY_PORT must differ"
    [[ "$SIGNIN_RATE" =~ ^[1-9][0-9]*r/[sm]$ ]] || die "STACK_SIGNIN_RATE must be like 10r/s, got '$SIGNIN_RATE'"
    [[ "$BUILD_CONFIG" == debug || "$BUILD_CONFIG" == release ]] || die "STACK_BUILD must be debug or release"
}

# HTTP status code of a GET of URL $1 (000 when nothing answers).
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true; }

# Serialises up/down/restart; supervisord is started with `9>&-` so that it does not hold the lock for its lifetime.
take_lock() {
    mkdir -p "$RUN_DIR" "$LOG_DIR"
    exec 9>"$RUN_DIR/stack.lock"
    flock -n 9 || die "another scripts/stack command is running (lock: $RUN_DIR/stack.lock)"
}

# supervisorctl on this stack's socket (it reads only the [supervisorctl] section of the config).
ctl() {
    ensure_venv supervisor "$SUPERVISOR_REQUIREMENT"
    STACK_RUN_DIR="$RUN_DIR" "$VENV/bin/supervisorctl" -c "$ROOT/scripts/lib/stack/supervisord.conf" "$@"
}

# Prints supervisord's pid while it runs.
supervisord_pid() {
    local pid
    pid="$(cat "$RUN_DIR/supervisord.pid" 2>/dev/null)" && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}
