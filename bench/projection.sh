#!/usr/bin/env bash
# Rebuilding views from a generated log (ten events per user: seven favorites, then three removals): events per second
# of `favorites-service rebuild favorites` and `rebuild popular`, against one scan reading every event (the database's
# own limit for reading the log).
#   bench/projection.sh [--quick] [--events 1000000]        (--quick: 20 000 events, the debug build)
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
events=1000000
bench_options "events=20000" "$@"
[[ "$events" =~ ^[1-9][0-9]*0$ ]] || die "--events must be a multiple of ten"
users=$((events / 10))
ensure_packages libpq-dev postgresql-15 curl
bench_build auth-service replay-upstream catalog-proxy favorites-service
start_bench_postgres
bench_back_end auth catalog favorites  # favorites-service makes its schema, then stops
kill "${BENCH_PID_OF[favorites]}"
log_info "generating $events events for $users users"
bench_psql -v users="$users" -f bench/sql/projection-log.sql
rates=()
timed() { # label command…
    local label="$1" seconds
    shift
    seconds="$( { TIMEFORMAT=%R; time "$@" >"$BENCH_WORK/timed.log" 2>&1; } 2>&1)" || { cat "$BENCH_WORK/timed.log" >&2; die "$label failed"; }
    rates+=("$(python3 -c "print(round($events / $seconds))")")
    printf '%-36s %8s s %10s events/s\n' "$label" "$seconds" "${rates[-1]}"
}
rebuild=(env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=favorites LOG_LEVEL=warning "$BENCH_BIN/favorites-service" rebuild)
echo "log of $events events ($users users)"
timed "one scan reading every event" bench_psql -c 'SELECT sum(length(data::text) + length(metadata::text)) FROM favorites.events'
timed "rebuild favorites (per-user view)" "${rebuild[@]}" favorites
timed "rebuild popular (async projection)" "${rebuild[@]}" popular
rows="$(bench_psql -c 'SELECT count(*) FROM favorites.favorites UNION ALL SELECT count(*) FROM favorites.popular_members' |
    paste -sd' ')"
[[ "$rows" == "$((users * 4)) $((users * 4))" ]] || die "the rebuilt views hold $rows rows, not $((users * 4)) each"
echo "ratio to the scan: favorites $(ratio "${rates[1]}" "${rates[0]}"), popular $(ratio "${rates[2]}" "${rates[0]}")"
bench_stamp
