#!/usr/bin/env bash
# The Postgres module (bench/postgres-bench: a session leased per statement, or held per task) vs pgbench with two
# threads (j2) and one (j1), on the same prepared point read and single-row insert (bench/sql/), taking turns; a figure
# is the median of its rounds. The goal, never asserted: held >= 0.80 of pgbench -j 2 (the ratios printed).
#   bench/postgres.sh [--quick] [--concurrency "4 8 16"] [--seconds 5] [--rounds 3]
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
concurrency="4 8 16" seconds=5 rounds=3
bench_options "concurrency=8 seconds=2 rounds=1" "$@"
ensure_packages libpq-dev postgresql-15
bench_build postgres-bench
start_bench_postgres
bench_psql -f bench/sql/postgres-tables.sql
for workload in read insert; do
    for c in $concurrency; do
        for _ in $(seq "$rounds"); do
            for program in lease held j2 j1; do
                if [[ "$program" == j* ]]; then
                    tps="$(pgbench -n -M prepared -c "$c" -j "${program#j}" -T "$seconds" -f "bench/sql/$workload.sql" \
                        "$BENCH_PG_URL" | awk '/^tps = / { print $3 }')"
                else
                    hold=() && [[ "$program" == held ]] && hold=(--hold)
                    tps="$("$BENCH_BIN/postgres-bench" --url "$BENCH_PG_URL" --workload "$workload" --concurrency "$c" \
                        --seconds "$seconds" "${hold[@]}" | sed -n 's/.*tps=\([0-9]*\).*/\1/p')"
                fi
                echo "$workload/$program/$c $tps - 0 0 - 0" >>"$BENCH_WORK/figures.txt"
            done
        done
    done
done
echo "transactions per second (the column 2xx/s), $rounds round(s) of ${seconds}s$( ((quick)) && echo ', a debug build')"
python3 bench/tool.py figures "$BENCH_WORK/figures.txt" j2 held/j1
bench_stamp
