"""auth-service's timings for bench/auth.sh, with the standard library only (statistics for the percentiles).

    auth.py hostile BASE EMAIL PASSWORD SIGN_INS HOSTILE
        One client signs in SIGN_INS times, one at a time, alone and then each sign-in together with HOSTILE sign-ups
        of the largest allowed size (a 64 KiB body: the longest address and password, padded with JSON whitespace),
        each from an address of its own, so no per-client limit helps and only the hashing line does.
    auth.py resets BASE REQUESTS_EACH MEMBER_PATTERN
        POST /v1/auth/password-reset for addresses with an account (MEMBER_PATTERN with {} for 1..50) and without one,
        interleaved at random so that the machine's drift falls on both alike. Every answer's status, body and headers
        (but the request id and the date) must be identical across the two kinds, or the script fails.
"""
import bisect
import collections
import concurrent.futures
import http.client
import json
import random
import statistics
import sys
import time
import urllib.parse
import uuid


def post(base, path, body, headers=None, connection=None):
    """(milliseconds, status, body, headers) of one request, on `connection` or a new one."""
    url = urllib.parse.urlparse(base)
    connection = connection or http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    started = time.perf_counter()
    connection.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    payload = response.read()
    return (time.perf_counter() - started) * 1000, response.status, payload, response.getheaders()


def percentiles(values, *points):
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return ["%.2f" % cuts[point - 1] for point in points]


def hostile(base, email, password, sign_ins, hostile_count):
    sign_ins, hostile_count = int(sign_ins), int(hostile_count)
    body = json.dumps({"email": email, "password": password})
    sign_in = lambda: post(base, "/v1/auth/login", body, {"X-Real-IP": "192.0.2.1"})[0]
    text = json.dumps({"email": "x" * 64 + "@" + "a" * 63 + "." + "b" * 63 + "." + "c" * 61,
                       "password": "\U0001F600\U0001F601" * 128, "experience": "ticketmaster"}, ensure_ascii=False)
    big = (text[:-1] + " " * (65536 - len(text.encode()) - 1) + "}").encode()
    alone, attacked, answers = [sign_in() for _ in range(sign_ins)], [], collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(hostile_count) as pool:
        for n in range(sign_ins):
            attacks = [pool.submit(post, base, "/v1/auth/signup", big,
                                   {"X-Real-IP": "10.%d.%d.%d" % (client, n // 250, n % 250 + 1)})
                       for client in range(1, hostile_count + 1)]
            attacked.append(sign_in())
            answers.update(attack.result()[1] for attack in attacks)
    print("%-40s %8s %8s" % ("sign-in, ms (%d one at a time)" % sign_ins, "p50", "p99"))
    quiet, loud = percentiles(alone, 50, 99), percentiles(attacked, 50, 99)
    print("%-40s %8s %8s\n%-40s %8s %8s" % ("alone", *quiet, "each with %d hostile sign-ups" % hostile_count, *loud))
    print("%-40s %8.2f %8.2f" % ("ratio", *(float(a) / float(b) for a, b in zip(loud, quiet))))
    print("hostile answers: " + " ".join("%d×%d" % item for item in sorted(answers.items())))


def resets(base, count, pattern):
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port)
    kinds = ["member"] * int(count) + ["stranger"] * int(count)
    random.shuffle(kinds)
    timings, seen = {"member": [], "stranger": []}, {}
    for n, kind in enumerate(kinds):
        email = pattern.format(n % 50 + 1) if kind == "member" else "nobody-%s@example.com" % uuid.uuid4().hex[:12]
        ms, status, payload, headers = post(base, "/v1/auth/password-reset", json.dumps({"email": email}),
                                            connection=connection)
        timings[kind].append(ms)
        answer = (status, payload, sorted((k.lower(), v) for k, v in headers if k.lower() not in ("x-request-id", "date")))
        if seen.setdefault("answer", answer) != answer:
            sys.exit("answers differ: %s vs %s" % (seen["answer"], answer))
    print("%-28s %6s %8s %8s %8s %8s" % ("password reset requests", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms"))
    for kind, label in (("member", "address with an account"), ("stranger", "address without one")):
        print("%-28s %6d %8s %8s %8s %8.2f" % (label, len(timings[kind]), *percentiles(timings[kind], 50, 90, 99),
                                               statistics.fmean(timings[kind])))
    # The Kolmogorov-Smirnov distance: the largest gap between the two cumulative curves (0 when identical).
    a, b = sorted(timings["member"]), sorted(timings["stranger"])
    ks = max(abs(bisect.bisect_right(a, x) / len(a) - bisect.bisect_right(b, x) / len(b)) for x in a + b)
    print("answers identical (status %d, same body and headers); median difference %.2f ms; KS distance %.3f" % (
        seen["answer"][0], statistics.median(a) - statistics.median(b), ks))


if __name__ == "__main__":
    {"hostile": hostile, "resets": resets}[sys.argv[1]](*sys.argv[2:])
