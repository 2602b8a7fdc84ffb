"""The rounds bench_wrk (scripts/lib/bench.sh) recorded, as a table: per workload, connections and side, the median
2xx/s of its rounds with their min–max, the median p99, the other answers and socket errors of all rounds, and the
ratio to the baseline side's median.

    figures.py FILE BASELINE [SIDE/OTHER …]   FILE's lines: "WORKLOAD/SIDE/CONNECTIONS 2xx/s p99 others socket kinds …"
    figures.py --cpu FILE                      FILE's lines: "WORKLOAD/SIDE GROUP MS": their medians, a row per pair

SIDE/OTHER adds a line per workload and connections with SIDE's median ÷ OTHER's.
"""
import collections
import statistics
import sys


def rate(value):
    return "%.1f" % value if value < 100 else "{:,.0f}".format(value)


def rounds(path, baseline, pairs):
    figures = collections.defaultdict(list)
    for line in open(path):
        key, *values = line.split()
        figures[tuple(key.split("/"))].append(values)
    median = {key: statistics.median_low(float(v[0]) for v in runs) for key, runs in figures.items()}
    print("%-12s %5s  %-14s %9s  %-15s %7s %7s %7s %7s  %s" % (
        "workload", "conns", "side", "2xx/s", "rounds", "p99 ms", "others", "socket", "÷ " + baseline, "kinds"))
    groups = dict.fromkeys((workload, conns) for workload, _, conns in figures)
    for workload, conns in groups:
        for (w, side, c), runs in figures.items():
            if (w, c) != (workload, conns):
                continue
            rps = [float(v[0]) for v in runs]
            p99 = [float(v[1]) for v in runs if v[1] != "-"]
            base = median.get((workload, baseline, conns))
            kinds = collections.Counter()
            for v in runs:
                for kind in v[4].split(",") if v[4] != "-" else []:
                    name, _, n = kind.replace("=", "x").partition("x")
                    kinds[name] += int(n)
            print("%-12s %5s  %-14s %9s  %-15s %7s %7d %7d %7s  %s" % (
                workload, conns, side, rate(median[w, side, c]), rate(min(rps)) + "–" + rate(max(rps)),
                "%.1f" % statistics.median_low(p99) if p99 else "-", sum(int(v[2]) for v in runs),
                sum(int(v[3]) for v in runs), "%.2f" % (median[w, side, c] / base) if base and side != baseline else "",
                " ".join("%s×%d" % item for item in sorted(kinds.items()))))
    for pair in pairs:
        side, other = pair.split("/")
        for workload, conns in groups:
            if (workload, side, conns) in median and median.get((workload, other, conns)):
                print("%s ÷ %s, %s at %s connections: %.2f" % (side, other, workload, conns,
                                                               median[workload, side, conns] / median[workload, other, conns]))


def cpu(path):
    runs = collections.defaultdict(list)
    for line in open(path):
        key, group, ms = line.split()
        runs[key, group].append(float(ms))
    groups = list(dict.fromkeys(group for _, group in runs))
    print("%-18s" % "request" + "".join(" %14s" % group for group in groups) + " %9s" % "total")
    for key in dict.fromkeys(key for key, _ in runs):
        values = [statistics.median(runs[key, group]) if runs[key, group] else 0 for group in groups]
        print("%-18s" % key + "".join(" %14.3f" % value for value in values) + " %9.3f" % sum(values))


if __name__ == "__main__":
    cpu(sys.argv[2]) if sys.argv[1] == "--cpu" else rounds(sys.argv[1], sys.argv[2], sys.argv[3:])
