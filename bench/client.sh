#!/usr/bin/env bash
# The device's CPU per heart in the client library (bench/client-bench), offline and live, with 0 and 5,000 cached
# favorites. Fails (but for --quick) unless, at 5,000, a heart with live changes costs at most twice an offline one.
#   bench/client.sh [--quick] [--hearts 200]        (--quick: the debug build, 50 hearts)
# shellcheck source=scripts/lib/bench.sh
source "$(dirname "$0")/../scripts/lib/bench.sh"
hearts=200
bench_options "hearts=50" "$@"
bench_build client-bench
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cpu_of() { sed -n '1s/.*CPU \([0-9.]*\) ms per heart.*/\1/p' <<<"$1"; }  # the first line's `CPU 1.23 ms per heart`
for cached in 0 5000; do
    offline="$("$BENCH_BIN/client-bench" --cached "$cached" --hearts "$hearts" --directory "$work")"
    live="$("$BENCH_BIN/client-bench" --cached "$cached" --hearts "$hearts" --directory "$work" --live)"
    printf '%s\n%s\n  live ÷ offline, CPU per heart: %s\n' "$offline" "$live" "$(ratio "$(cpu_of "$live")" "$(cpu_of "$offline")")"
done
bench_stamp
((quick)) || python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 2 * float(sys.argv[2]))' "$(cpu_of "$live")" \
    "$(cpu_of "$offline")" || die "with 5,000 cached favorites, a heart with live changes on costs more than twice an offline one"
