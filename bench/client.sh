#!/usr/bin/env bash
# What a heart costs in the client library with a large synced copy on the device: the queue is saved, the copy is
# not. Offline (nothing listens at the client's server), so the figure is the device's own cost, not the network's.
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
for cached in 0 5000; do
    "$BENCH_BIN/client-bench" --cached "$cached" --hearts "$hearts" --directory "$work"
done
bench_stamp
