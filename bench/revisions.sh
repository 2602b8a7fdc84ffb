#!/usr/bin/env bash
# Two commits of the product, end to end, in one run: favorite writes (PUT/DELETE toggles) and the favorites list
# through an nginx gateway. Each commit's release build runs the whole back end (auth-service, catalog-proxy,
# favorites-service) in turn on the same PostgreSQL 15, nginx and users; the commits take turns, `rounds` times, and
# each figure is the median of its rounds, with its p99 and the spread of the rounds (the run-to-run noise a
# difference must beat). For a change whose worth should show where users feel it, such as the database driver's.
#
#   bench/revisions.sh BEFORE AFTER [--seconds 10] [--rounds 3] [--concurrency "16 32"]
#
# The commits are built in a worktree under .local/revisions (release, a scratch path of its own): the first run takes
# a full build, and each commit's executables are kept for the next.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

[[ $# -ge 2 ]] || die "usage: bench/revisions.sh BEFORE AFTER [--seconds 10] [--rounds 3] [--concurrency \"16 32\"]"
revisions=("$(git rev-parse --short "$1^{commit}")" "$(git rev-parse --short "$2^{commit}")")
shift 2
seconds=10
rounds=3
concurrency_levels="16 32"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --concurrency) concurrency_levels="$2"; shift ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done
bench_fixtures
users=200

ensure_packages libpq-dev postgresql-15 curl wrk nginx

# Release builds of each commit, one after the other in one worktree (so the second builds only what changed), their
# executables kept under .local/revisions/<commit>/.
products=(auth-service catalog-proxy favorites-service replay-upstream)
tree=.local/revisions/tree
declare -A bin=()
for revision in "${revisions[@]}"; do
    bin[$revision]="$PWD/.local/revisions/$revision"
    [[ -x "${bin[$revision]}/favorites-service" ]] && continue
    [[ -d "$tree" ]] || git worktree add --detach "$tree" "$revision" >/dev/null
    git -C "$tree" checkout --quiet --detach "$revision"
    log_info "building $revision (release)"
    (cd "$tree" && BENCH_BUILD=release bench_build "${products[@]}" && mkdir -p "${bin[$revision]}" \
        && for product in "${products[@]}"; do cp "$BENCH_BIN/$product" "${bin[$revision]}/"; done \
        && cp -R "$BENCH_BIN"/*.resources "${bin[$revision]}/")  # bundles the executables read (openapi.json)
done

start_bench_postgres
bench_start_mail
replay_port="$(bench_free_port)"
bench_start replay "${bin[${revisions[1]}]}/replay-upstream" --port "$replay_port" --fixtures "$fixtures"
auth_port="$(bench_free_port)"; catalog_port="$(bench_free_port)"; favorites_port="$(bench_free_port)"
auth_url="http://127.0.0.1:$auth_port"
bench_start_favorites_gateway "$favorites_port"

# The three services of one commit, on the same ports every time (so the gateway needs no reload), each in schemas of
# its own (`auth_<commit>`, …): a commit may add migrations the other's services would refuse.
service_pids=()
start_services() { # revision
    local dir="${bin[$1]}"
    env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA="auth_$1" HTTP_PORT="$auth_port" LOG_LEVEL=warning BCRYPT_COST=4 \
        "$dir/auth-service" >>"$BENCH_WORK/auth-$1.log" 2>&1 &
    service_pids+=($!)
    bench_wait_ready "$auth_url/health/ready" "$BENCH_WORK/auth-$1.log"
    env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA="catalog_$1" HTTP_PORT="$catalog_port" LOG_LEVEL=warning \
        AUTH_URL="$auth_url" TICKETMASTER_URL="http://127.0.0.1:$replay_port" TICKETMASTER_API_KEY=replay \
        CATALOG_SEARCH_TTL_SECONDS=3600 CATALOG_DETAIL_TTL_SECONDS=3600 CATALOG_USER_RATE_PER_SECOND=1000000 \
        CATALOG_USER_UPSTREAM_SHARE_PERCENT=100 "$dir/catalog-proxy" >>"$BENCH_WORK/catalog-$1.log" 2>&1 &
    service_pids+=($!)
    bench_wait_ready "http://127.0.0.1:$catalog_port/health/ready" "$BENCH_WORK/catalog-$1.log"
    env DATABASE_URL="$BENCH_PG_URL" DATABASE_SCHEMA="favorites_$1" HTTP_PORT="$favorites_port" LOG_LEVEL=warning \
        AUTH_URL="$auth_url" CATALOG_URL="http://127.0.0.1:$catalog_port" \
        "$dir/favorites-service" >>"$BENCH_WORK/favorites-$1.log" 2>&1 &
    service_pids+=($!)
    bench_wait_ready "$gateway/v1/favorites/health/ready" "$BENCH_WORK/favorites-$1.log"
}
stop_services() {
    kill "${service_pids[@]}" 2>/dev/null || true
    wait "${service_pids[@]}" 2>/dev/null || true
    service_pids=()
}

load() { # revision script connections → "rps p99 non-2xx"
    wrk -t2 -c"$3" -d"${seconds}s" --latency -s "$BENCH_WORK/$1/$2.lua" "$gateway" | bench_wrk_figures
}

declare -A figures=()  # "<revision> <workload> <connections>" → "rps p99" per round, one per line
for round in $(seq 1 "$rounds"); do
    order=("${revisions[@]}")
    ((round % 2 == 0)) && order=("${revisions[1]}" "${revisions[0]}")
    for revision in "${order[@]}"; do
        start_services "$revision"
        if [[ ! -s "$BENCH_WORK/$revision/tokens.txt" ]]; then
            log_info "signing up $users users ($revision)"
            mkdir -p "$BENCH_WORK/$revision"
            bench_sign_up "$users" "$auth_url" ticketmaster "$BENCH_WORK/$revision/tokens.txt"
            bench_favorites_lua "$BENCH_WORK/$revision/tokens.txt" "$BENCH_WORK/$revision"
        fi
        log_info "round $round: $revision"
        wrk -t2 -c16 -d2s -s "$BENCH_WORK/$revision/toggle.lua" "$gateway" >/dev/null  # warm: pools, caches, JIT-free but cold
        for workload in toggle list; do
            for c in $concurrency_levels; do
                read -r rps p99 errors <<<"$(load "$revision" "$workload" "$c")"
                [[ "$errors" -eq 0 ]] || log_warn "$revision $workload c$c: $errors non-2xx answers"
                figures["$revision $workload $c"]+="$rps $p99"$'\n'
            done
        done
        stop_services
    done
done

# One column (1: rps, 2: p99) of a figure's rounds, sorted; its median; the spread of the rps as min–max.
column() { printf '%s' "${figures[$1]}" | awk -v c="$2" 'NF { print $c }' | sort -n; }
median_of() { column "$1" "$2" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { column "$1" 1 | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }'; }

echo
bench_stamp
echo "before=${revisions[0]} after=${revisions[1]} rounds=$rounds seconds=$seconds users=$users synchronous_commit=off"
printf '%-28s %10s %8s %14s %10s %8s %14s %7s\n' "workload" "before rps" "p99 ms" "rounds" "after rps" "p99 ms" \
    "rounds" "ratio"
for workload in toggle list; do
    for c in $concurrency_levels; do
        before="${revisions[0]} $workload $c"
        after="${revisions[1]} $workload $c"
        before_rps="$(median_of "$before" 1)"; before_p99="$(median_of "$before" 2)"
        after_rps="$(median_of "$after" 1)"; after_p99="$(median_of "$after" 2)"
        printf '%-28s %10s %8s %14s %10s %8s %14s %7s\n' "$workload, $c connections" "$before_rps" "$before_p99" \
            "$(spread "$before")" "$after_rps" "$after_p99" "$(spread "$after")" "$(ratio "$after_rps" "$before_rps")"
    done
done
