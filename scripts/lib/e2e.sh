# shellcheck shell=bash
# A throwaway stack for the suites that need the whole system (Tests/EndToEndTests): two replicas of each service
# behind the gateway, on recorded upstream data, with ports (18xxx) and a state directory of its own, beside any stack
# you run. Used by scripts/test (journeys, schemathesis, the faults suite).
# Source after scripts/lib/common.sh and set E2E_ROOT, E2E_DIR (its state) and E2E_BIN_DIR.
# Its services' settings, and why: scripts/lib/e2e-services.env.

# Below the ephemeral port range (32768-60999), where the unit tests' throwaway clusters and outgoing connections
# take ports: a PostgreSQL port there once failed to bind in CI right after the unit tests.
E2E_GATEWAY_PORT=18080
E2E_PEER_PORT=18070
E2E_PG_PORT=25432
E2E_REPLAY_PORT=18090
E2E_SMTP_PORT=11025
E2E_OTLP_PORT=14318
E2E_PORT_OFFSET=10000
E2E_UPSTREAM_TIMEOUT_MS=1000
E2E_UPSTREAM_ATTEMPTS=2
# Every client of the suites is 127.0.0.1, and the journeys sign up dozens of users at once: the gateway's per-address
# limit of sign-ins is raised (BadInputTests still floods past it).
E2E_SIGNIN_RATE=50r/s
E2E_SIGNIN_BURST=200

# The environment that makes scripts/stack manage this stack instead of the default one.
e2e_stack_env() {
    printf '%s\n' "STACK_DIR=$E2E_DIR" "STACK_USER_ENV_FILE=$E2E_DIR/service.env" "STACK_BIN_DIR=$E2E_BIN_DIR" \
        "STACK_GATEWAY_PORT=$E2E_GATEWAY_PORT" "STACK_PEER_PORT=$E2E_PEER_PORT" "STACK_PG_PORT=$E2E_PG_PORT" \
        "STACK_REPLAY_PORT=$E2E_REPLAY_PORT" "STACK_PORT_OFFSET=$E2E_PORT_OFFSET" "STACK_SMTP_PORT=$E2E_SMTP_PORT" \
        "STACK_SIGNIN_RATE=$E2E_SIGNIN_RATE" "STACK_SIGNIN_BURST=$E2E_SIGNIN_BURST"
}

e2e_stack() {
    local -a stack_env
    mapfile -t stack_env < <(e2e_stack_env)
    env "${stack_env[@]}" "$E2E_ROOT/scripts/stack" "$@"
}

stop_e2e_stack() {
    log_info "stopping the end-to-end stack"
    e2e_stack down >/dev/null 2>&1 || log_warn "scripts/stack down failed for the end-to-end stack ($E2E_DIR)"
    stop_otlp_sink
}

# A real OTLP receiver for the services' traces, writing every span it gets to $E2E_DIR/spans.jsonl.
start_otlp_sink() {
    ensure_otlp_sink
    if (exec 3<>"/dev/tcp/127.0.0.1/$E2E_OTLP_PORT") 2>/dev/null; then
        die "port $E2E_OTLP_PORT (the OTLP receiver) is taken"
    fi
    "$OTLP_SINK_PYTHON" "$E2E_ROOT/scripts/otlp-sink.py" --port "$E2E_OTLP_PORT" --output "$E2E_DIR/spans.jsonl" \
        >"$E2E_DIR/otlp-sink.log" 2>&1 </dev/null &
    echo $! >"$E2E_DIR/otlp-sink.pid"
    local deadline=$((SECONDS + 20))
    until grep -q '^listening on' "$E2E_DIR/otlp-sink.log" 2>/dev/null; do
        ((SECONDS < deadline)) || { cat "$E2E_DIR/otlp-sink.log" >&2; die "the OTLP receiver did not start"; }
        sleep 0.2
    done
}

stop_otlp_sink() {
    [[ -f "$E2E_DIR/otlp-sink.pid" ]] || return 0
    kill "$(cat "$E2E_DIR/otlp-sink.pid")" 2>/dev/null || true
    rm -f "$E2E_DIR/otlp-sink.pid"
}

# A fresh stack every run: whatever an interrupted run left running is stopped, and its database removed (an old
# one would carry, say, the sign-in throttle that schemathesis's failed log-ins set for 127.0.0.1). The caller stops
# it (stop_e2e_stack), also when it fails.
start_e2e_stack() {
    if [[ -d "$E2E_DIR" ]]; then
        e2e_stack down >/dev/null 2>&1 || true
        stop_otlp_sink
        rm -rf "$E2E_DIR"
    fi
    mkdir -p "$E2E_DIR"
    { grep -v '^#' "$E2E_ROOT/scripts/lib/e2e-services.env"
      printf '%s\n' "UPSTREAM_TIMEOUT_MS=$E2E_UPSTREAM_TIMEOUT_MS" "UPSTREAM_ATTEMPTS=$E2E_UPSTREAM_ATTEMPTS" \
          "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$E2E_OTLP_PORT"; } >"$E2E_DIR/service.env"
    start_otlp_sink

    log_info "starting the end-to-end stack (gateway 127.0.0.1:$E2E_GATEWAY_PORT, state in ${E2E_DIR#"$E2E_ROOT"/})"
    if ! e2e_stack up >"$E2E_DIR/stack-up.log" 2>&1; then
        cat "$E2E_DIR/stack-up.log" >&2
        die "the end-to-end stack did not start"
    fi
}

# Runs the tests matching `filter` against the stack, their JUnit report in `report` (scripts/test checks from the
# reports that every test ran).
run_stack_suite() { # filter report [extra environment…]
    local filter="$1" report="$2" password port
    shift 2
    local -a stack_env replicas=()
    mapfile -t stack_env < <(e2e_stack_env)
    password="$(sed -n 's/^FAVORITES_SERVICE_DB_PASSWORD=//p' "$E2E_DIR/stack.env" | tail -n 1)"
    for port in 8301 8302; do replicas+=("http://127.0.0.1:$((port + E2E_PORT_OFFSET))"); done
    log_info "the tests matching $filter (through the gateway)"
    # The suites restart what they kill with scripts/stack, so they get the same STACK_* settings. The catalog's time
    # budget: every attempt's timeout plus the longest pause between attempts (150 ms × attempt number).
    local -a environment=("${stack_env[@]}" "$@" E2E_GATEWAY_URL="http://127.0.0.1:$E2E_GATEWAY_PORT"
        E2E_FAVORITES_REPLICAS="$(IFS=,; echo "${replicas[*]}")"
        E2E_CATALOG_REPLICAS="http://127.0.0.1:$((8201 + E2E_PORT_OFFSET)),http://127.0.0.1:$((8202 + E2E_PORT_OFFSET))"
        E2E_CATALOG_TIME_BUDGET_MS="$((E2E_UPSTREAM_ATTEMPTS * E2E_UPSTREAM_TIMEOUT_MS + 150 * E2E_UPSTREAM_ATTEMPTS))"
        E2E_REPLAY_URL="http://127.0.0.1:$E2E_REPLAY_PORT" E2E_MAILDIR="$E2E_DIR/mail/new"
        E2E_SPANS="$E2E_DIR/spans.jsonl" E2E_SIGNIN_BURST="$E2E_SIGNIN_BURST" E2E_SIGNIN_RATE="$E2E_SIGNIN_RATE"
        E2E_FAVORITES_DATABASE_URL="postgresql://favorites_service:$password@127.0.0.1:$E2E_PG_PORT/favoriteme"
        E2E_RUN_DIR="$E2E_DIR/run" E2E_STACK_COMMAND="$E2E_ROOT/scripts/stack")
    if ! (export "${environment[@]}" && run_built_tests --filter "$filter" --xunit-output "$report"); then
        tail -n 30 "$E2E_DIR"/logs/*-service-*.log "$E2E_DIR"/logs/catalog-proxy-*.log >&2 || true
        die "$filter failed"
    fi
}

# Fails naming every test of `swift test list` whose name starts with `prefix` that no report holds as run.
check_every_test_ran() { # list-file prefix report…
    local list="$1" prefix="$2" missing
    shift 2
    if ! missing="$(python3 "$E2E_ROOT/scripts/lib/every_test_ran.py" \
        <(awk -v prefix="$prefix" 'index($0, prefix) == 1' "$list") "$@")"; then
        die "tests that no stage ran:"$'\n'"$missing"
    fi
}
