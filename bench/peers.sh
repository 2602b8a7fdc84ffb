#!/usr/bin/env bash
# FavoriteMe beside PocketBase (auth and per-user records in one Go binary on SQLite) and beside PostgreSQL alone, in one
# run, with one client (wrk and bench/wrk.lua): favorite toggles (ours keyed, commit off and on; PocketBase's records
# carry the same cell item), pgbench running the service's toggle statements and the lean reference (bench/sql/), the
# list of 5, the heart ids and sign-in at one bcrypt cost; ours directly and through the deployed gateway. A figure is
# the median of its rounds, which alternate the sides; only 2xx answers count. Then the CPU per answer of each process
# group, and each service's start-up time and memory. docs/benchmarks.md has the rest.
#   bench/peers.sh [--quick] [--seconds 10] [--rounds 3] [--connections "16 32"] [--snapshot-ttl SECONDS]
#                  [--workloads "toggle list ids signin"] [--profile 0|1]
#   --quick: one 2 s round per figure, 20 users, the debug build: a smoke check.
#   --workloads: only these (a change's own figures, while working on it; a published run has all four).
#   --profile 1: perf samples favorites-service through the CPU runs of the toggles and the list, and prints where
#   its time went (perf, Debian's linux-perf; symbols need the release build's debug info, which it has).
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
seconds=10 warmup=3 rounds=3 connections="16 32" snapshot_ttl="" users=200 workloads="toggle list ids signin" profile=0
bench_options "seconds=2 warmup=1 rounds=1 users=20" "$@"
((rounds >= 3 || quick)) || die "--rounds $rounds: a figure is the median of at least 3 rounds (--quick runs 1)"
cost=10 password="benchmark passphrase" top="${connections##* }"  # cost: PocketBase's default, our sign-in replica's
ensure_packages libpq-dev postgresql-15 curl wrk nginx python3-venv
((profile)) && ensure_packages perf
runs() { [[ " $workloads " == *" $1 "* ]]; } # workload: whether this run measures it
bench_build auth-service replay-upstream catalog-proxy favorites-service
start_bench_postgres
ttl=(${snapshot_ttl:+FAVORITES_SNAPSHOT_TTL_SECONDS="$snapshot_ttl"})
bench_back_end auth catalog  # auth-service at cost 4 gives the services their keys; users sign in at auth-signin
bench_service auth-signin BCRYPT_COST="$cost"
bench_service favorites "${ttl[@]}"
commit_on="$BENCH_PG_URL options='-c synchronous_commit=on'"
bench_service favorites-on DATABASE_URL="$commit_on" "${ttl[@]}"
bench_service favorites-pgbench DATABASE_SCHEMA=pgbench  # pgbench's tables, which no running service reads
kill "${BENCH_PID_OF[favorites-pgbench]}"
# REAL_IP_FROM: the X-Real-IP wrk.lua gives each user is that user's address, as behind Kubernetes' ingress.
upstreams=(auth-service="${BENCH_URL[auth-signin]#http://}" catalog-proxy="${BENCH_URL[catalog]#http://}" REAL_IP_FROM=127.0.0.1)
bench_start_gateway nginx favorites-service="${BENCH_URL[favorites]#http://}" "${upstreams[@]}"
bench_start_gateway nginx-on favorites-service="${BENCH_URL[favorites-on]#http://}" "${upstreams[@]}"
bench_start_pocketbase "$password"

log_info "signing up $users users on each side"
tool() { python3 bench/tool.py "$@"; }
ours_tokens() { tool ours-tokens "${BENCH_URL[auth-signin]}" "$users" "$password" "$BENCH_WORK/tokens-ours.txt"; }
# Access tokens live 15 minutes at most, and a run's rounds of one workload can take longer: signed in anew every 10.
signed_in_at=$((SECONDS - 600))  # never yet
fresh_tokens() { ((SECONDS - signed_in_at < 600)) || { ours_tokens && signed_in_at=$SECONDS; }; }
fresh_tokens
tool pocketbase-tokens "${BENCH_URL[pocketbase]}" "$users" "$password" "$BENCH_WORK/tokens-pocketbase.txt"
tool items "${BENCH_URL[catalog]}" "$(head -n 1 "$BENCH_WORK/tokens-ours.txt")" "$BENCH_WORK/items.txt" \
    G5diZfkn0B-bh vv17FZfdGkSrrMju vvG18Z4m501KZN vv1k8Z4E0YG7MA0I 1Ae7ZfdGkSp307Y  # recorded Ticketmaster events
head -n 1 "$BENCH_WORK/items.txt" | cut -f 3 >"$BENCH_WORK/item.json"
mapfile -d '' toggle_values < <(tool toggle-values "$users" "$BENCH_WORK/item.json")
sqlite() { python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1], uri=True).execute(sys.argv[2]).fetchone()[0])' "file:$BENCH_WORK/pocketbase/data.db?mode=ro" "$1"; }
ours_costs="$(bench_psql -c "SELECT string_agg(DISTINCT substr(password_hash, 5, 2), ' ') FROM auth.users")"
pocketbase_costs="$(sqlite "SELECT group_concat(DISTINCT substr(password, 5, 2)) FROM users")"
[[ "$ours_costs" == "$cost" && "$pocketbase_costs" == "$cost" ]] ||
    die "stored bcrypt costs: ours $ours_costs, PocketBase's $pocketbase_costs, not $cost: set cost= to compare alike"

# One run of a workload against one side; sets result (bench_wrk's line), recorded as FIGURE unless "-". pgbench's
# transaction is a toggle's two writes, in the schema pgbench; it gives no p99.
declare -A target=([ours]=favorites [ours-on]=favorites-on [nginx]=nginx [nginx-on]=nginx-on [pocketbase]=pocketbase)
load() { # workload side connections seconds [figure]
    local figure="${5:--}" kind=ours url options="" script=service
    if [[ "$2" == pgbench* || "$2" == lean* ]]; then
        [[ "$2" == *-on ]] && options="-c synchronous_commit=on"
        [[ "$2" == lean* ]] && script=lean
        bench_round_start
        PGOPTIONS="-c search_path=pgbench $options" pgbench -n -M prepared "${toggle_values[@]}" \
            -f "bench/sql/toggle-$script.sql" -c "$3" -j 2 -T "$4" "$BENCH_PG_URL" \
            >"$BENCH_WORK/pgbench.txt" 2>&1 || { cat "$BENCH_WORK/pgbench.txt" >&2; die "pgbench failed"; }
        result="$(awk '/^tps = / { printf "%.2f", $3 * 2 }' "$BENCH_WORK/pgbench.txt") - 0 0 - 0"
        [[ "$figure" == - ]] || echo "$figure $result" >>"$BENCH_WORK/figures.txt"
        return
    fi
    url="${BENCH_URL[${target[$2]}]}"
    [[ "$2" == pocketbase ]] && kind=pocketbase
    [[ "$kind" == ours ]] && fresh_tokens
    [[ "$1/$2" == signin/ours* ]] && url="${BENCH_URL[auth-signin]}"
    bench_wrk "$figure" "$url" "$3" "$4" WRK_WORKLOAD="$1" WRK_SIDE="$kind" WRK_TOKENS="$BENCH_WORK/tokens-$kind.txt" \
        WRK_ITEMS="$BENCH_WORK/items.txt" WRK_STATE="$BENCH_WORK/state-$kind.txt" WRK_PASSWORD="$password" \
        WRK_USERS="$users" WRK_ONE_ADDRESS="${one_address:-}"
}

# Rounds of one workload: a warm-up of each side, then for each connection count each round runs every side in turn.
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

# Where a request's CPU goes: as many runs per side as rounds, at the most connections, with the CPU time each process
# group used meanwhile per 2xx answer. The client is wrk, this shell's only child meanwhile.
declare -A cpu_pids=([nginx]="${BENCH_PID_OF[nginx]}" [favorites-service]="${BENCH_PID_OF[favorites]}"
    [catalog-proxy]="${BENCH_PID_OF[catalog]}" [auth-service]="${BENCH_PID_OF[auth]} ${BENCH_PID_OF[auth-signin]}"
    [PostgreSQL]="$(head -n 1 "$BENCH_WORK/data/postmaster.pid")" [PocketBase]="${BENCH_PID_OF[pocketbase]}")
groups=(client nginx favorites-service catalog-proxy auth-service PostgreSQL PocketBase)
ticks() { # group
    # shellcheck disable=SC2086  # a group may hold several process ids
    if [[ "$1" == client ]]; then awk '{ print $16 + $17 }' /proc/$$/stat; else bench_cpu_ticks ${cpu_pids[$1]}; fi
}
switches() { # group: its threads' context switches so far (a hand-off between threads is one, or two)
    # shellcheck disable=SC2086
    bench_switches ${cpu_pids[$1]}
}
switched_groups=(nginx favorites-service PostgreSQL PocketBase)
measure_cpu() { # workload
    local side group _ perf_pid
    local -A before switched
    ((profile)) && { perf record -q -F 999 -g -o "$BENCH_WORK/perf-$1.data" -p "${BENCH_PID_OF[favorites]}" & perf_pid=$!; }
    for _ in $(seq "$rounds"); do
        for side in nginx pocketbase; do
            for group in "${groups[@]}"; do before[$group]="$(ticks "$group")"; done
            for group in "${switched_groups[@]}"; do switched[$group]="$(switches "$group")"; done
            load "$1" "$side" "$top" "$seconds"
            for group in "${switched_groups[@]}"; do
                echo "$1/$([[ "$side" == nginx ]] && echo ours || echo PocketBase) $group $(awk -v n="${result##* }" \
                    -v d="$(($(switches "$group") - switched[$group]))" 'BEGIN { printf "%.2f", (n > 0 ? d / n : 0) }')"
            done >>"$BENCH_WORK/switches.txt"
            for group in "${groups[@]}"; do
                echo "$1/$([[ "$side" == nginx ]] && echo ours || echo PocketBase) $group $(awk -v n="${result##* }" \
                    -v d="$(($(ticks "$group") - before[$group]))" -v hz="$(getconf CLK_TCK)" \
                    'BEGIN { printf "%.3f", (n > 0 ? d * 1000 / hz / n : 0) }')"
            done >>"$BENCH_WORK/cpu.txt"
        done
    done
    if ((profile)); then
        kill -INT "$perf_pid" && wait "$perf_pid" || true
        # Self time by symbol, then time spent in our own modules' frames and below them (call graphs).
        { perf report -i "$BENCH_WORK/perf-$1.data" --no-children --sort dso,symbol --percent-limit 0.8 --stdio
          perf report -i "$BENCH_WORK/perf-$1.data" --children --sort symbol --percent-limit 2 --stdio -g none |
              grep -E 'FavoritesService|ServiceKit|Postgres|Hummingbird|EventStore|Contracts' | head -n 40
        } 2>/dev/null | grep -E '^ +[0-9]' | swift demangle --simplified | cut -c1-170 >"$BENCH_WORK/profile-$1.txt"
    fi
}

# Each service's memory before the loads (VmRSS) and at their peak (VmHWM, at the end).
mib() { awk -v field="$2:" '$1 == field { printf "%.1f", $2 / 1024 }' "/proc/${BENCH_PID_OF[$1]}/status"; }
declare -A idle=([auth-signin]="$(mib auth-signin VmRSS)" [catalog]="$(mib catalog VmRSS)" [favorites]="$(mib favorites VmRSS)")
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
if runs toggle; then
    log_info "toggles, $rounds round(s) of ${seconds}s"
    measure toggle ours pocketbase nginx ours-on nginx-on pgbench lean pgbench-on lean-on  # each pair side by side
    measure_cpu toggle  # before the fill below changes what the toggles find
fi
log_info "every user holds the 5 items, on both sides; the list of 5, the heart ids, sign-in at bcrypt cost $cost"
fresh_tokens
tool fill ours "${BENCH_URL[favorites]}" "$BENCH_WORK/tokens-ours.txt" "$BENCH_WORK/items.txt"
tool fill pocketbase "${BENCH_URL[pocketbase]}" "$BENCH_WORK/tokens-pocketbase.txt" "$BENCH_WORK/items.txt"
runs list && measure list ours pocketbase nginx && measure_cpu list
runs ids && measure ids ours pocketbase nginx
if runs signin; then
    measure signin ours pocketbase nginx
    # auth-service's per-address throttle (no setting): every sign-in from one address, a check rather than a figure.
    one_address=1 load signin ours "$top" "$seconds" "signin/ours-one-address/$top"
fi

show() { psql "$1" -qAt -c "SHOW $2"; }
echo "FavoriteMe vs PocketBase $POCKETBASE_VERSION, $users users, ${seconds}s rounds; load average $load_before before," \
    "$(cut -d' ' -f1-3 /proc/loadavg) after$( ((quick)) && echo '; --quick: a smoke check')"
echo "ours: PostgreSQL 15, fsync=$(show "$BENCH_PG_URL" fsync), synchronous_commit=$(show "$BENCH_PG_URL" \
    synchronous_commit) (-on: $(show "$commit_on" synchronous_commit)); PocketBase: SQLite journal_mode=$(sqlite \
    'PRAGMA journal_mode'), $(grep -ao '_pragma=synchronous([A-Z]*)' "$pocketbase" | head -n 1) (its DSN);" \
    "bcrypt cost $cost on both; a cell item of $(wc -c <"$BENCH_WORK/item.json") bytes on both"
tool figures "$BENCH_WORK/figures.txt" pocketbase pgbench/lean pgbench-on/lean-on
echo "CPU per 2xx answer, ms ($top connections, the median of $rounds run(s); ours through nginx):"
tool cpu "$BENCH_WORK/cpu.txt"
echo "Thread switches per 2xx answer (the same runs):"
tool cpu "$BENCH_WORK/switches.txt"
for profiled in "$BENCH_WORK"/profile-*.txt; do
    [[ -e "$profiled" ]] || continue
    echo "favorites-service under ${profiled##*profile-} (perf, self time by library and symbol, above 0.8 %):"
    cat "$profiled"
done
for service in auth-signin catalog favorites; do
    echo "$service: start→ready ${BENCH_READY_MS[$service]} ms (migrations included), VmRSS ${idle[$service]} MiB" \
        "before the loads, VmHWM $(mib "$service" VmHWM) MiB after them"
done
bench_stamp
