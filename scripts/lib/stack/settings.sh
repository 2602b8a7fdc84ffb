# shellcheck shell=bash
# shellcheck disable=SC2034  # the settings are read by the other parts of scripts/stack
# scripts/stack's settings (from STACK_* in the environment, described at the top of scripts/stack), where the stack
# keeps its state, and the services of deploy/services.txt, read when this file is sourced. Source first, after
# scripts/lib/common.sh: every other part of scripts/lib/stack/ uses these.

ROOT="$(project_root)"
LOCAL_DIR="$(realpath -m "${STACK_DIR:-$ROOT/.local}")"
LOG_DIR="$LOCAL_DIR/logs"
RUN_DIR="$LOCAL_DIR/run"
NGINX_DIR="$LOCAL_DIR/nginx"
STACK_ENV_FILE="$LOCAL_DIR/stack.env"
USER_ENV_FILE="$(realpath -m "${STACK_USER_ENV_FILE:-$ROOT/.env.stack}")"
RENDER_GATEWAY="$ROOT/deploy/nginx/render"
SERVICES_FILE="$ROOT/deploy/services.txt"

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
FIXTURES_DIR="${STACK_FIXTURES_DIR:-$ROOT/../shared/fixtures}"
DATABASE_NAME=favoriteme

# Per-service facts, kept in one place (deploy/services.txt, shared with the gateway's renderer and
# scripts/validate-deploy): database role (= schema owner), schema, gateway path segment, port base of the replicas.
SERVICES=()
declare -A SERVICE_ROLE=() SERVICE_SCHEMA=() SERVICE_ROUTE=() SERVICE_PORT_BASE=()
load_services() {
    local name role schema route port base extra number=0
    [[ -f "$SERVICES_FILE" ]] || die "missing $SERVICES_FILE"
    while read -r name role schema route port base extra || [[ -n "$name" ]]; do
        number=$((number + 1))
        [[ -z "$name" || "$name" == \#* ]] && continue
        [[ -n "$base" && -z "$extra" && "$port" =~ ^[0-9]+$ && "$base" =~ ^[0-9]+$ ]] \
            || die "$SERVICES_FILE:$number: expected six columns (service role schema route port stack-base)"
        SERVICES+=("$name")
        SERVICE_ROLE[$name]="$role"
        SERVICE_SCHEMA[$name]="$schema"
        SERVICE_ROUTE[$name]="$route"
        SERVICE_PORT_BASE[$name]="$base"
    done <"$SERVICES_FILE"
    ((${#SERVICES[@]})) || die "no services in $SERVICES_FILE"
}
load_services
# Each takes a service name.
service_role() { printf '%s\n' "${SERVICE_ROLE[$1]}"; }
service_schema() { printf '%s\n' "${SERVICE_SCHEMA[$1]}"; }
service_port_base() { printf '%s\n' "${SERVICE_PORT_BASE[$1]}"; }
service_route() { printf '%s\n' "${SERVICE_ROUTE[$1]}"; }
replica_port() { echo $(($(service_port_base "$1") + PORT_OFFSET + $2)); } # service replica-number

validate_settings() {
    [[ "$REPLICAS" =~ ^[1-9][0-9]?$ ]] || die "STACK_REPLICAS must be 1…99 (ports are 8101…8199 etc.), got '$REPLICAS'"
    [[ "$PG_PORT" =~ ^[0-9]+$ ]] || die "STACK_PG_PORT must be a number, got '$PG_PORT'"
    [[ "$GATEWAY_PORT" =~ ^[0-9]+$ ]] || die "STACK_GATEWAY_PORT must be a number, got '$GATEWAY_PORT'"
    if ! [[ "$PORT_OFFSET" =~ ^[0-9]+$ ]] || ((PORT_OFFSET > 50000)); then
        die "STACK_PORT_OFFSET must be a number up to 50000, got '$PORT_OFFSET'"
    fi
    [[ "$PEER_PORT" =~ ^[0-9]+$ ]] || die "STACK_PEER_PORT must be a number, got '$PEER_PORT'"
    [[ "$PEER_PORT" != "$GATEWAY_PORT" ]] || die "STACK_PEER_PORT and STACK_GATEWAY_PORT must differ"
    [[ "$WAIT_SECONDS" =~ ^[0-9]+$ ]] || die "STACK_WAIT_SECONDS must be a number, got '$WAIT_SECONDS'"
    case "$BUILD_CONFIG" in debug | release) ;; *) die "STACK_BUILD must be debug or release, got '$BUILD_CONFIG'" ;; esac
}

ensure_local_dirs() {
    mkdir -p "$LOCAL_DIR" "$LOG_DIR" "$RUN_DIR" "$NGINX_DIR/tmp"
    [[ -w "$LOCAL_DIR" && -w "$LOG_DIR" && -w "$RUN_DIR" ]] \
        || die "$LOCAL_DIR is not writable by $(id -un) (created by another user?); fix its ownership first"
}

# Where files go that a system user (postgres, nginx's workers) must reach when root's project path is closed to it,
# e.g. a checkout under /root: one directory per checkout (or per STACK_DIR), named by a hash of its path.
fallback_dir() {
    local key="$ROOT"
    [[ "$LOCAL_DIR" == "$ROOT/.local" ]] || key="$LOCAL_DIR"
    printf '/var/lib/favoriteme-stack/%s\n' "$(printf '%s' "$key" | sha256sum | cut -c1-12)"
}
