#!/usr/bin/env bash
# The Postgres module vs pgbench: the same prepared point read and single-row insert on the same throwaway PostgreSQL
# 15, at the same concurrency, in one run. bench/postgres-bench runs N tasks on one pool of N sessions, leasing a
# session per statement (lease, as a service's single read) or keeping one per task (held, as a transaction body);
# pgbench runs with two threads (-j 2, one per core: the goal's baseline) and one. The programs take turns, `rounds`
# times; a figure is the median of its rounds. The goal, printed and never asserted: held >= 0.80 of pgbench -j 2.
#
#   bench/postgres.sh [--quick] [--concurrency "4 8 16"] [--seconds 5] [--rounds 3]
set -euo pipefail
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"

concurrency="4 8 16" seconds=5 rounds=3
bench_options "concurrency=8 seconds=2 rounds=1" "$@"
ensure_packages libpq-dev postgresql-15
bench_build postgres-bench
start_bench_postgres
bench_psql <<'SQL'
CREATE TABLE bench_items (id int PRIMARY KEY, title text NOT NULL, price numeric(8,2));
INSERT INTO bench_items SELECT i, 'Item ' || i, (i % 500) / 3.0 FROM generate_series(1, 100000) i;
CREATE TABLE bench_writes (id bigserial PRIMARY KEY, worker int NOT NULL, title text NOT NULL,
                           created_at timestamptz NOT NULL DEFAULT now());
VACUUM ANALYZE;
SQL
printf '\\set id random(1, 100000)\nSELECT id, title, price FROM bench_items WHERE id = :id;\n' >"$BENCH_WORK/read.sql"
printf "\\\\set worker random(0, 15)\nINSERT INTO bench_writes (worker, title) VALUES (:worker, 'favorite');\n" \
    >"$BENCH_WORK/insert.sql"

run() { # workload concurrency program: transactions per second
    local hold=()
    [[ "$3" == held ]] && hold=(--hold)
    case "$3" in
        lease | held) "$BENCH_BIN/postgres-bench" --url "$BENCH_PG_URL" --workload "$1" --concurrency "$2" \
            --seconds "$seconds" "${hold[@]}" | sed -n 's/.*tps=\([0-9]*\).*/\1/p' ;;
        *) PGHOST=127.0.0.1 PGPORT=$BENCH_PG_PORT PGUSER=postgres pgbench -n -M prepared -f "$BENCH_WORK/$1.sql" \
            -c "$2" -j "${3#j}" -T "$seconds" postgres 2>/dev/null | awk '/^tps = / { printf "%d", $3 }' ;;
    esac
}
printf '%-8s %8s %10s %10s %12s %12s %8s %8s %8s\n' workload sessions lease held "pgbench -j2" "pgbench -j1" \
    lease÷j2 held÷j2 held÷j1
lowest=1000
for workload in read insert; do
    for c in $concurrency; do
        declare -A runs=() m=()
        for _ in $(seq "$rounds"); do
            for program in lease held j2 j1; do runs[$program]+="$(run "$workload" "$c" "$program") "; done
        done
        # shellcheck disable=SC2086  # a figure's rounds, one word each
        for program in lease held j2 j1; do m[$program]="$(median ${runs[$program]})"; done
        printf '%-8s %8s %10.0f %10.0f %12.0f %12.0f %8s %8s %8s\n' "$workload" "$c" "${m[lease]}" "${m[held]}" \
            "${m[j2]}" "${m[j1]}" "$(ratio "${m[lease]}" "${m[j2]}")" "$(ratio "${m[held]}" "${m[j2]}")" \
            "$(ratio "${m[held]}" "${m[j1]}")"
        lowest="$(python3 -c "print(min($lowest, ${m[held]} / ${m[j2]}))")"
    done
done
echo "goal (held sessions >= 0.80 of pgbench -j 2): lowest held ratio $(ratio "$lowest" 1)$( ((quick)) &&
    echo ', not judged on a debug build')"
bench_stamp
