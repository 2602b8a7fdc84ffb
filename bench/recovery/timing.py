"""Times POST /v1/auth/password-reset for addresses with and without an account, interleaved at random so that drift
in the machine's load falls on both alike, and prints the two latency distributions side by side.

    timing.py BASE_URL REQUESTS_EACH MEMBER_EMAIL_PATTERN

MEMBER_EMAIL_PATTERN holds one {} for 0..N-1 (the accounts the script signed up); strangers get fresh addresses. Each
request's status, body and headers (but the request id and the date) must be identical across the two kinds, or the
script fails: a difference there would tell more than any timing.
"""
import http.client
import json
import random
import sys
import time
import urllib.parse
import uuid


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def ks_distance(a, b):
    """The Kolmogorov-Smirnov statistic: the largest gap between the two empirical distributions (0 = identical)."""
    points = sorted(set(a) | set(b))
    sa, sb = sorted(a), sorted(b)
    gap, i, j = 0.0, 0, 0
    for x in points:
        while i < len(sa) and sa[i] <= x:
            i += 1
        while j < len(sb) and sb[j] <= x:
            j += 1
        gap = max(gap, abs(i / len(sa) - j / len(sb)))
    return gap


def main():
    base, count, pattern = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port)
    kinds = ["member"] * count + ["stranger"] * count
    random.shuffle(kinds)
    timings = {"member": [], "stranger": []}
    seen = {}
    for n, kind in enumerate(kinds):
        email = pattern.format(n % 50) if kind == "member" else f"nobody-{uuid.uuid4().hex[:12]}@example.com"
        body = json.dumps({"email": email})
        started = time.perf_counter()
        connection.request("POST", "/v1/auth/password-reset", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        payload = response.read()
        timings[kind].append((time.perf_counter() - started) * 1000)
        answer = (response.status, payload, tuple(sorted(
            (k.lower(), v) for k, v in response.getheaders() if k.lower() not in ("x-request-id", "date"))))
        seen.setdefault(kind, answer)
        if answer != seen[kind] or (len(seen) == 2 and seen["member"] != seen["stranger"]):
            sys.exit(f"answers differ: {seen} vs {answer}")
    print(f"{'password reset requests':<28} {'n':>6} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for kind, label in (("member", "address with an account"), ("stranger", "address without one")):
        values = timings[kind]
        print(f"{label:<28} {len(values):>6} {percentile(values, .5):>8.2f} {percentile(values, .9):>8.2f} "
              f"{percentile(values, .99):>8.2f} {sum(values) / len(values):>8.2f}")
    print(f"{'answers identical':<28} {'yes':>6}   status {seen['member'][0]}, same body and headers")
    print(f"{'median difference (ms)':<28} {percentile(timings['member'], .5) - percentile(timings['stranger'], .5):>6.2f}"
          f"   KS distance {ks_distance(timings['member'], timings['stranger']):.3f}")


main()
