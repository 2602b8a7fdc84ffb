#!/usr/bin/env bash
# Two commits of the back end, end to end: keyed favorite toggles and the list through the deployed gateway (wrk), each
# commit's release build in schemas of its own on one PostgreSQL 15, taking turns `rounds` times; a figure is the
# median of its rounds with their spread, the noise a difference must beat.
#   bench/revisions.sh BEFORE AFTER [--seconds 10] [--rounds 3] [--concurrency "16 32"]
# The commits are built in a worktree under .local/revisions; each commit's executables are kept for the next run.
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
(($# >= 2)) || die "usage: bench/revisions.sh BEFORE AFTER [--seconds 10] [--rounds 3] [--concurrency \"16 32\"]"
revisions=("$(git rev-parse --short "$1^{commit}")" "$(git rev-parse --short "$2^{commit}")")
shift 2
seconds=10 rounds=3 concurrency="16 32" users=200
bench_options "" "$@"
ensure_packages libpq-dev postgresql-15 curl wrk nginx
products=(auth-service catalog-proxy favorites-service replay-upstream) tree=.local/revisions/tree
for revision in "${revisions[@]}"; do
    [[ -x ".local/revisions/$revision/favorites-service" ]] && continue
    [[ -d "$tree" ]] || git worktree add --detach "$tree" "$revision" >/dev/null
    git -C "$tree" checkout --quiet --detach "$revision"
    (cd "$tree" && BENCH_BUILD=release bench_build "${products[@]}")
    mkdir -p ".local/revisions/$revision"
    cp -R "${products[@]/#/$tree/.build-release/release/}" "$tree"/.build-release/release/*.resources \
        ".local/revisions/$revision/"  # with the bundles the executables read (openapi.json)
done
start_bench_postgres
BENCH_BIN="$PWD/.local/revisions/${revisions[1]}"
bench_back_end  # replay-upstream and the mail server, shared
printf '%s\t\t{}\n' G5diZfkn0B-bh vv17FZfdGkSrrMju vvG18Z4m501KZN vv1k8Z4E0YG7MA0I 1Ae7ZfdGkSp307Y >"$BENCH_WORK/items.txt"
for round in $(seq "$rounds"); do
    for revision in "${revisions[@]:round % 2}" "${revisions[@]:0:round % 2}"; do  # in turns, the order alternating
        log_info "round $round: $revision"
        BENCH_BIN="$PWD/.local/revisions/$revision"
        for service in auth catalog favorites; do bench_service "$service" DATABASE_SCHEMA="${service}_$revision"; done
        bench_start_gateway "gateway-$revision-$round" auth-service="${BENCH_URL[auth]#http://}" \
            catalog-proxy="${BENCH_URL[catalog]#http://}" favorites-service="${BENCH_URL[favorites]#http://}"
        python3 bench/tool.py ours-tokens "${BENCH_URL[auth]}" "$users" "benchmark passphrase" \
            "$BENCH_WORK/tokens-$revision.txt"
        client=(WRK_SIDE=ours WRK_TOKENS="$BENCH_WORK/tokens-$revision.txt" WRK_ITEMS="$BENCH_WORK/items.txt"
            WRK_STATE="$BENCH_WORK/state-$revision.txt")
        bench_wrk - "${BENCH_URL[gateway-$revision-$round]}" 16 2 WRK_WORKLOAD=toggle "${client[@]}"  # warm-up
        for workload in toggle list; do
            for c in $concurrency; do
                bench_wrk "$workload/$revision/$c" "${BENCH_URL[gateway-$revision-$round]}" "$c" "$seconds" \
                    WRK_WORKLOAD="$workload" "${client[@]}"
            done
        done
        for service in auth catalog favorites "gateway-$revision-$round"; do kill "${BENCH_PID_OF[$service]}"; done
        wait "${BENCH_PID_OF[favorites]}" 2>/dev/null || true
    done
done
echo "before=${revisions[0]} after=${revisions[1]} rounds=$rounds seconds=$seconds users=$users synchronous_commit=off"
python3 bench/tool.py figures "$BENCH_WORK/figures.txt" "${revisions[0]}"
bench_stamp
