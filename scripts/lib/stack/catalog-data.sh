# shellcheck shell=bash
# The catalog's data in scripts/stack (sourced by it): its upstreams, the real APIs when .env.stack names them and
# replay-upstream serving the recorded fixtures otherwise, and the phones and flash cards datasets it keeps a copy of.

# Succeeds when .env.stack sets variable $1 to something non-empty.
user_env_has() {
    local word
    for word in "${USER_ENV[@]}"; do [[ "$word" == "$1="?* ]] && return 0; done
    return 1
}

# Sources .env.stack does not point at a real API go to the replay server: Ticketmaster and the NYT without their
# keys (with a placeholder key the replay accepts), the key-less ones (the Rijksmuseum, Google Books, the flash
# cards) unless their URL is set. The phones have no upstream: their dataset is loaded (load_datasets).
replay_env() {
    local replay="http://127.0.0.1:$REPLAY_PORT"
    user_env_has TICKETMASTER_API_KEY || printf '%s\n' "TICKETMASTER_URL=$replay" "TICKETMASTER_API_KEY=replay"
    # Records through the replay's imitation of the museum's resolver, on another host name than the data it sends
    # them to, as id.rijksmuseum.nl sends them to data.rijksmuseum.nl: the stack goes through the live redirect.
    user_env_has RIJKSMUSEUM_SEARCH_URL \
        || printf '%s\n' "RIJKSMUSEUM_SEARCH_URL=$replay" "RIJKSMUSEUM_RECORDS_URL=http://localhost:$REPLAY_PORT/id"
    user_env_has NYT_BOOKS_API_KEY || printf '%s\n' "NYT_BOOKS_URL=$replay" "NYT_BOOKS_API_KEY=replay"
    user_env_has GOOGLE_BOOKS_URL || user_env_has GOOGLE_BOOKS_API_KEY || printf '%s\n' "GOOGLE_BOOKS_URL=$replay"
    user_env_has FLASHCARDS_URL || printf '%s\n' "FLASHCARDS_URL=$replay"
}

needs_replay() { [[ -n "$(replay_env)" ]]; }

# The datasets catalog-proxy serves from its own copy, loaded from the recorded files (idempotent: every `up`
# loads them again, which changes nothing but the load's time). A copy of the phones' API in MOBILES_URL, or the
# live cards endpoint, refreshes them in the service.
load_datasets() {
    local -a env_words=()
    mapfile -t env_words < <(service_env catalog-proxy 1)
    local mobiles="$FIXTURES_DIR/mobiles" cards="$FIXTURES_DIR/flashcards"
    (
        cd "$ROOT" || exit 1
        binary="$BIN_DIR/catalog-proxy"
        only_env "${env_words[@]}"
        "$binary" load mobiles "$mobiles/harshil64-mobiles-list.json" "$mobiles/unidentified-repo-mobile-1-images.json" \
            && "$binary" load flashcards "$cards/bcecilio-cards-live.json"
    ) >>"$LOG_DIR/datasets.log" 2>&1 </dev/null || die "loading the datasets failed; see ${LOG_DIR#"$ROOT"/}/datasets.log"
    log_info "loaded the mobiles and flash cards datasets from ${FIXTURES_DIR#"$ROOT"/}"
}

start_replay() {
    local pidfile="$RUN_DIR/replay-upstream.pid" log="$LOG_DIR/replay-upstream.log" pid
    if pid="$(live_pid "$pidfile" replay-upstream)"; then
        runs_stale_binary "$pid" || { log_info "replay-upstream already running (pid $pid)"; return 0; }
        kill -TERM "$pid" 2>/dev/null || true
        wait_for_exit "$pid" 10 || kill -KILL "$pid" 2>/dev/null || true
    fi
    [[ -d "$FIXTURES_DIR" ]] || die "no fixtures at $FIXTURES_DIR (needed without API keys; set STACK_FIXTURES_DIR)"
    port_in_use "$REPLAY_PORT" && die "port $REPLAY_PORT (replay-upstream) is taken; set STACK_REPLAY_PORT"
    (cd "$ROOT" && exec setsid nohup "$BIN_DIR/replay-upstream" --port "$REPLAY_PORT" --fixtures "$FIXTURES_DIR" \
        --museum-data-host 127.0.0.1) \
        >>"$log" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid" >"$pidfile"
    log_info "started replay-upstream (pid $pid, port $REPLAY_PORT): the catalog serves recorded data"
}
