#!/usr/bin/env bash
# What a heart costs in the client library with a large synced copy on the device: offline (nothing listens at the
# client's server: the queue is saved, the copy is not), and with live changes on (the server answered in the process,
# no network: the heart saved, sent, and its echo synced into the copy, which is appended to its journal, not
# rewritten). Either way the figure is the device's own cost, not a network's or a server's. Fails unless a heart
# with live changes on costs at most twice an offline one, with 5,000 cached favorites.
#
#   bench/client.sh [--quick]        (--quick: the debug build, fewer hearts)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh
# shellcheck source=scripts/lib/bench.sh
source scripts/lib/bench.sh

hearts=200
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) bench_quick_build; hearts=50 ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done

bench_build client-bench
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The CPU time per heart of a run's first line (`… CPU 1.23 ms per heart …`): what the device spends, without the
# waits of its threads (corelibs URLSession on Linux answers in steps of a few milliseconds even in the process).
cpu_of() { sed -n '1s/.*CPU \([0-9.]*\) ms per heart.*/\1/p' <<<"$1"; }

for cached in 0 5000; do
    offline="$("$BENCH_BIN/client-bench" --cached "$cached" --hearts "$hearts" --directory "$work")"
    echo "$offline"
    live="$("$BENCH_BIN/client-bench" --cached "$cached" --hearts "$hearts" --directory "$work" --live)"
    echo "$live"
    echo "  live ÷ offline, CPU per heart: $(ratio "$(cpu_of "$live")" "$(cpu_of "$offline")")"
done
bench_stamp
within="$(awk -v a="$(cpu_of "$live")" -v b="$(cpu_of "$offline")" 'BEGIN { print (a <= 2 * b) ? "yes" : "no" }')"
[[ "$within" == yes ]] \
    || die "with 5,000 cached favorites, a heart with live changes on costs more than twice an offline one"
