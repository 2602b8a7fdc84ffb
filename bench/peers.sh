#!/usr/bin/env bash
# FavoriteMe beside PocketBase, the self-hosted tool a small app would take instead (auth and per-user records in one Go
# binary on SQLite), and beside PostgreSQL alone, in one run, with one client (wrk and bench/wrk.lua):
#   1. favorite/unfavorite toggles of each user's 5 items, ours with an Idempotency-Key on each: ours takes each item's
#      cell from catalog-proxy (or its copy of a moment ago: FAVORITES_SNAPSHOT_TTL_SECONDS), PocketBase stores the
#      same cell item in a JSON field of the record the client sends. Ours with synchronous_commit off, then on (the
#      production default); and pgbench, no HTTP at all, running favorites-service's own statements of the same
#      toggles (pgbench) and the lean reference with the same guarantees (lean), off and on (bench/sql/);
#   2. the list of a user's 5 favorites (each with its cell item, both sides); 3. the heart ids; 4. sign-in, both sides
#      at one bcrypt cost (read back from every stored hash; the run stops if they differ), then once all from one
#      address (auth-service's throttle, a check rather than a figure).
# Ours directly and through the deployed gateway (deploy/nginx/gateway.conf.in rendered as scripts/stack does, but for
# scratch paths, free ports, one server per upstream and REAL_IP_FROM=127.0.0.1, so that the X-Real-IP wrk.lua gives
# each user is that user's address), PocketBase directly. Rounds alternate the sides; a figure is the median of its
# rounds (at least 3) with their min–max and median p99; only 2xx answers count, the others are listed beside. Then
# as many runs per side of the toggles and the list with the CPU time each process group spent per answer (/proc).
# With --log-events N, the log then grows by N events and the toggles through nginx run again. Nothing asserted.
#
#   bench/peers.sh [--quick] [--seconds 10] [--rounds 3] [--connections "16 32"] [--snapshot-ttl SECONDS]
#                  [--log-events 0]
#   --quick: 1 round of 2 s per figure (5 s for sign-ins), 20 users, 20 000 log events, the debug build: a smoke check.
set -euo pipefail
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"

seconds=10 warmup=3 rounds=3 connections="16 32" snapshot_ttl="" users=200 log_events=0
bench_options "seconds=2 warmup=1 rounds=1 users=20 log_events=20000" "$@"
((rounds >= 3 || quick)) || die "--rounds $rounds: a figure is the median of at least 3 rounds (--quick runs 1)"
cost=10  # PocketBase's default bcrypt cost; our sign-in replica's BCRYPT_COST (the service's default is 12)
password="benchmark passphrase"
top="${connections##* }"
ensure_packages libpq-dev postgresql-15 curl wrk nginx python3-venv
bench_build auth-service replay-upstream catalog-proxy favorites-service
start_bench_postgres
ttl=(${snapshot_ttl:+FAVORITES_SNAPSHOT_TTL_SECONDS="$snapshot_ttl"})
# auth-service at bcrypt cost 4 gives the services their keys; the users sign in at a second replica, at cost 10.
bench_back_end auth catalog
bench_service auth-signin BCRYPT_COST="$cost"
bench_service favorites "${ttl[@]}"
commit_on="$BENCH_PG_URL options='-c synchronous_commit=on'"
bench_service favorites-on DATABASE_URL="$commit_on" "${ttl[@]}"
# pgbench's copy of favorites-service's tables, migrated by a replica that stops once ready: no projection reads it.
bench_service favorites-pgbench DATABASE_SCHEMA=pgbench
kill "${BENCH_PID_OF[favorites-pgbench]}"
upstreams=(auth-service="${BENCH_URL[auth-signin]#http://}" catalog-proxy="${BENCH_URL[catalog]#http://}"
    REAL_IP_FROM=127.0.0.1)
bench_start_gateway nginx favorites-service="${BENCH_URL[favorites]#http://}" "${upstreams[@]}"
bench_start_gateway nginx-on favorites-service="${BENCH_URL[favorites-on]#http://}" "${upstreams[@]}"
bench_start_pocketbase "$password"

log_info "signing up $users users on each side"
setup() { python3 bench/peers/setup.py "$@"; }
ours_tokens() { setup ours-tokens "${BENCH_URL[auth-signin]}" "$users" "$password" "$BENCH_WORK/tokens-ours.txt"; }
ours_tokens
setup pocketbase-tokens "${BENCH_URL[pocketbase]}" "$users" "$password" "$BENCH_WORK/tokens-pocketbase.txt"
# Ticketmaster events from the recorded fixtures: replay-upstream serves each once (in the warm-up); after that each
# lookup is a hit in catalog-proxy's cache.
setup items "${BENCH_URL[catalog]}" "$(head -n 1 "$BENCH_WORK/tokens-ours.txt")" "$BENCH_WORK/items.txt" \
    G5diZfkn0B-bh vv17FZfdGkSrrMju vvG18Z4m501KZN vv1k8Z4E0YG7MA0I 1Ae7ZfdGkSp307Y
head -n 1 "$BENCH_WORK/items.txt" | cut -f 3 >"$BENCH_WORK/item.json"
bench_pgbench_toggles "$users" "$BENCH_WORK/item.json" "$BENCH_WORK"

sqlite() { python3 -c 'import sqlite3, sys
print(sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute(sys.argv[2]).fetchone()[0])' \
    "$BENCH_WORK/pocketbase/data.db" "$1"; }
ours_costs="$(bench_psql -c "SELECT string_agg(DISTINCT substr(password_hash, 5, 2), ' ') FROM auth.users")"
pocketbase_costs="$(sqlite "SELECT group_concat(DISTINCT substr(password, 5, 2)) FROM users")"
[[ "$ours_costs" == "$cost" && "$pocketbase_costs" == "$cost" ]] || die "stored bcrypt costs: ours '$ours_costs'," \
    "PocketBase's '$pocketbase_costs', not $cost: the sign-ins would not compare the same work (set cost=)"

# One run of a workload against one side; sets result (bench_wrk's line) and records it as FIGURE unless "-".
declare -A target=([ours]=favorites [ours-on]=favorites-on [nginx]=nginx [nginx-on]=nginx-on [pocketbase]=pocketbase)
load() { # workload side connections seconds [figure]
    local figure="${5:--}" kind=ours url options="" script=service tps
    case "$2" in
        pgbench* | lean*)  # a pgbench transaction is a toggle's two writes; pgbench gives no p99
            [[ "$2" == *-on ]] && options="-c synchronous_commit=on"
            [[ "$2" == lean* ]] && script=lean
            tps="$(bench_pgbench "$BENCH_WORK/toggle-$script.sql" "$3" "$4" "$options")"
            result="$(python3 -c "print('%.2f' % (2 * $tps))") - 0 0 - 0"
            [[ "$figure" == - ]] || echo "$figure $result" >>"$BENCH_WORK/figures.txt"
            return ;;
        pocketbase) kind=pocketbase ;;
    esac
    url="${BENCH_URL[${target[$2]}]}"
    [[ "$1/$2" == signin/ours* ]] && url="${BENCH_URL[auth-signin]}"
    bench_wrk "$figure" "$url" "$3" "$4" WRK_WORKLOAD="$1" WRK_SIDE="$kind" WRK_TOKENS="$BENCH_WORK/tokens-$kind.txt" \
        WRK_ITEMS="$BENCH_WORK/items.txt" WRK_STATE="$BENCH_WORK/state-$kind.txt" WRK_PASSWORD="$password" \
        WRK_USERS="$users" WRK_ONE_ADDRESS="${one_address:-}"
}

# Rounds of one workload: after a warm-up of each side, for each connection count, each round runs every side in turn.
measure() { # workload side…
    local workload="$1" side c _ duration="$seconds"
    shift
    [[ "$workload" == signin ]] && ((duration < 5)) && duration=5  # a 2 s round of cost-10 hashes says little
    for side in "$@"; do load "$workload" "$side" 16 "$warmup"; done
    for c in $connections; do
        for _ in $(seq "$rounds"); do
            for side in "$@"; do load "$workload" "$side" "$c" "$duration" "$workload/$side/$c"; done
        done
    done
}

# Where a request's CPU goes: as many runs per side as rounds, at the most connections, with the CPU time each
# process group used meanwhile, per 2xx answer. The client is wrk, this shell's only child meanwhile. A group whose
# processes ended meanwhile (a pool closing an idle session) shows 0.
declare -A cpu_pids=([nginx]="${BENCH_PID_OF[nginx]}" [favorites-service]="${BENCH_PID_OF[favorites]}"
    [catalog-proxy]="${BENCH_PID_OF[catalog]}" [auth-service]="${BENCH_PID_OF[auth]} ${BENCH_PID_OF[auth-signin]}"
    [PostgreSQL]="$(head -n 1 "$BENCH_WORK/data/postmaster.pid")" [PocketBase]="${BENCH_PID_OF[pocketbase]}")
groups=(client nginx favorites-service catalog-proxy auth-service PostgreSQL PocketBase)
ticks() { # group
    # shellcheck disable=SC2086  # a group may hold several process ids
    if [[ "$1" == client ]]; then awk '{ print $16 + $17 }' /proc/$$/stat; else bench_cpu_ticks ${cpu_pids[$1]}; fi
}
measure_cpu() { # workload
    local side group _ answers
    local -A before
    for _ in $(seq "$rounds"); do
        for side in nginx pocketbase; do
            for group in "${groups[@]}"; do before[$group]="$(ticks "$group")"; done
            load "$1" "$side" "$top" "$seconds"
            answers="${result##* }"
            for group in "${groups[@]}"; do
                echo "$1/$side $group $(awk -v d="$(($(ticks "$group") - before[$group]))" -v n="$answers" \
                    -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", (n > 0 ? d * 1000 / hz / n : 0) }')"
            done >>"$BENCH_WORK/cpu.txt"
        done
    done
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
log_info "toggles, $rounds round(s) of ${seconds}s"
measure toggle ours pocketbase nginx ours-on nginx-on pgbench pgbench-on lean lean-on
measure_cpu toggle  # before the fill below changes what the toggles find
log_info "every user holds the 5 items, on both sides"
ours_tokens  # access tokens live 15 minutes at most
setup fill ours "${BENCH_URL[favorites]}" "$BENCH_WORK/tokens-ours.txt" "$BENCH_WORK/items.txt"
setup fill pocketbase "${BENCH_URL[pocketbase]}" "$BENCH_WORK/tokens-pocketbase.txt" "$BENCH_WORK/items.txt"
log_info "the list of 5"
measure list ours pocketbase nginx
measure_cpu list
ours_tokens
log_info "the heart ids; sign-in at bcrypt cost $cost"
measure ids ours pocketbase nginx
measure signin ours pocketbase nginx
one_address=1 load signin ours "$top" "$seconds" "signin/ours-one-address/$top"
if ((log_events > 0)); then
    log_info "growing the log by $log_events events"
    ours_tokens
    # Ten events per filler stream, of a type no view reads, and the popular projection's checkpoint past them; then
    # what the load left is settled (autovacuum and the checkpointer would otherwise work during the measurement).
    bench_psql -c "SET search_path = favorites;
        INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
        SELECT 'filler-' || (n / 10), n % 10 + 1, gen_random_uuid(), 'bench-filler', 1, '{}', '{}'
          FROM generate_series(0, $log_events - 1) n;
        INSERT INTO projection_checkpoints (projection, transaction_id, position)
        SELECT 'popular', pg_current_xact_id(), max(position) FROM events ON CONFLICT (projection)
            DO UPDATE SET transaction_id = excluded.transaction_id, position = excluded.position" \
        -c "VACUUM ANALYZE favorites.events" -c CHECKPOINT
    load toggle nginx "$top" "$seconds" "toggle/nginx-after-$log_events-events/$top"
fi

echo "FavoriteMe vs PocketBase $("$pocketbase" --version | awk '{ print $NF }'), $users users, rounds of ${seconds}s;" \
    "load average before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)$( ((quick)) && echo '; --quick: a smoke check')"
show() { psql "$1" -qAt -c "SHOW $2"; }
echo "ours: PostgreSQL 15, fsync=$(show "$BENCH_PG_URL" fsync), synchronous_commit=$(show "$BENCH_PG_URL" \
    synchronous_commit) (the -on sides: $(show "$commit_on" synchronous_commit)), bcrypt cost $ours_costs;" \
    "PocketBase: SQLite journal_mode=$(sqlite 'PRAGMA journal_mode'), $(grep -ao '_pragma=synchronous([A-Z]*)' \
    "$pocketbase" | head -n 1) (its DSN), bcrypt cost $pocketbase_costs; cell item of $(wc -c <"$BENCH_WORK/item.json") bytes"
python3 bench/figures.py "$BENCH_WORK/figures.txt" pocketbase pgbench/lean pgbench-on/lean-on
echo "CPU per 2xx answer, ms ($top connections, median of $rounds run(s); ours through nginx):"
python3 bench/figures.py --cpu "$BENCH_WORK/cpu.txt"
bench_stamp
