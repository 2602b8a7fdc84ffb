# shellcheck shell=bash
# Shared by the benchmark scripts: a throwaway PostgreSQL 15 server and small formatting helpers.
# Source after scripts/lib/common.sh.

# Starts a cluster in a temporary directory on a random port, removed when the script exits. Sets BENCH_WORK (the
# directory), BENCH_PG_PORT and BENCH_PG_URL (key/value form, superuser), for the sourcing script. Asynchronous commit, so that clients are
# measured rather than the disk's fsync latency.
# shellcheck disable=SC2034  # the BENCH_* variables are read by the sourcing script
start_bench_postgres() {
    local bin=/usr/lib/postgresql/15/bin
    BENCH_WORK="$(mktemp -d /tmp/favoriteme-bench-XXXXXX)"
    BENCH_PG_PORT=$((20000 + RANDOM % 20000))
    [[ $EUID -eq 0 ]] && chown postgres "$BENCH_WORK"
    _bench_as_owner "$bin/initdb" -D "$BENCH_WORK/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    _bench_as_owner "$bin/pg_ctl" -D "$BENCH_WORK/data" -l "$BENCH_WORK/server.log" -w \
        -o "-p $BENCH_PG_PORT -k $BENCH_WORK -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c max_connections=100 -c shared_buffers=256MB" \
        start >/dev/null
    BENCH_PG_URL="host=127.0.0.1 port=$BENCH_PG_PORT user=postgres dbname=postgres sslmode=disable"
    trap stop_bench_postgres EXIT
}

stop_bench_postgres() {
    [[ -n "${BENCH_CLEANUP:-}" ]] && eval "$BENCH_CLEANUP"
    _bench_as_owner /usr/lib/postgresql/15/bin/pg_ctl -D "$BENCH_WORK/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$BENCH_WORK"
}

_bench_as_owner() { if [[ $EUID -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# ratio A B: A ÷ B with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

bench_stamp() {
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo none) cores=$(nproc)"
}
