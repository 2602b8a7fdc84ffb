"""The benchmarks' Python side, standard library only: `python3 bench/tool.py COMMAND ARGUMENT…`, a command per
function below: users and their tokens (peer-N@example.com, N = 1…USERS; a token per line, user N's on line N, as
bench/wrk.lua reads them), PocketBase's collection, the items and their cell, pgbench's values, tables of medians, and
auth-service's timings."""
import bisect
import collections
import concurrent.futures
import http.client
import json
import random
import statistics
import sys
import time
import urllib.error
import urllib.request
import uuid


def call(method, url, body=None, token=None, address=None, retry=True):
    """(status, answer) of one request (a body of bytes is sent as it is); a 503 (auth-service's line of password checks
    is full: service-busy) is tried again, unless `retry` is off."""
    headers = {"Content-Type": "application/json", "User-Agent": "favoriteme-bench"}  # PocketBase keys logins on it
    headers.update({"Authorization": "Bearer " + token} if token else {})
    headers.update({"X-Real-IP": address} if address else {})
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data, headers, method=method)
    for _ in range(60):
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        if status != 503 or not retry:
            return status, json.loads(text) if text else None
        time.sleep(1)


def check(ok, what, status, answer):
    return answer if ok else sys.exit("%s: %s %s" % (what, status, answer))


def each_user(users, work, out=None):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(1, int(users) + 1)))
    if out:
        open(out, "w").write("".join(token + "\n" for token in results))


def ours_tokens(auth, users, password, out):
    """Each user signs up or in from an address of its own (X-Real-IP), as wrk.lua signs in."""
    def sign_in(user):
        body, address = {"email": "peer-%d@example.com" % user, "password": password}, "10.77.%d.%d" % divmod(user, 256)
        status, answer = call("POST", auth + "/v1/auth/login", body, address=address)
        if status == 401:  # not signed up yet
            status, answer = call("POST", auth + "/v1/auth/signup", dict(body, experience="ticketmaster"), address=address)
        return check(status in (200, 201), "auth-service, " + body["email"], status, answer)["accessToken"]
    each_user(users, sign_in, out)


def pocketbase_init(base, superuser, password):
    status, answer = call("POST", base + "/api/collections/_superusers/auth-with-password",
                          {"identity": superuser, "password": password})
    token = check(status == 200, "PocketBase superuser sign-in", status, answer)["token"]
    # Our services log no request at LOG_LEVEL=warning; PocketBase's request log (a row per request) goes off too.
    status, settings = call("PATCH", base + "/api/settings", {"logs": {"maxDays": 0}}, token)
    check(status == 200 and not settings["rateLimits"]["enabled"], "PocketBase settings (no rate limit)", status, settings)
    # bench/pocketbase/favorites.json: per-user rules (a user lists, reads, creates and deletes their own records,
    # nobody updates one), one record per (user, experience, item) as our view's primary key, the cell item as JSON.
    status, answer = call("POST", base + "/api/collections", json.load(open("bench/pocketbase/favorites.json")), token)
    check(status == 200, "PocketBase collection", status, answer)


def pocketbase_tokens(base, users, password, out):
    def sign_in(user):
        email = "peer-%d@example.com" % user
        call("POST", base + "/api/collections/users/records",  # 400 when the user exists already
             {"id": "user%011d" % user, "email": email, "password": password, "passwordConfirm": password})
        status, answer = call("POST", base + "/api/collections/users/auth-with-password",
                              {"identity": email, "password": password})
        return check(status == 200, "PocketBase sign-in, " + email, status, answer)["token"]
    each_user(users, sign_in, out)


def items(catalog, token, out, *ids):
    """"id<TAB>title<TAB>cell item" per item: catalog-proxy's `view=cell` answer, what a favorite keeps."""
    with open(out, "w") as file:
        for item in ids:
            status, answer = call("GET", "%s/v1/catalog/ticketmaster/items/%s?view=cell" % (catalog, item), token=token)
            check(status == 200, "catalog-proxy, " + item, status, answer)
            file.write("%s\t%s\t%s\n" % (item, json.dumps(answer["title"])[1:-1], json.dumps(answer, separators=(",", ":"))))


def fill(side, base, tokens_path, items_path):
    """Every user holds every item: the lists' starting point."""
    tokens, held = open(tokens_path).read().split(), [line.rstrip("\n").split("\t") for line in open(items_path)]

    def hold_all(user):
        for number, (item, title, cell) in enumerate(held, start=1):
            if side == "ours":  # a PUT of a favorite the user has writes nothing
                status, answer = call("PUT", "%s/v1/favorites/ticketmaster/%s" % (base, item), token=tokens[user - 1])
                ok = status in (200, 201)
            else:  # the record ids wrk.lua uses; a second create is refused by the unique index (400)
                status, answer = call("POST", base + "/api/collections/favorites/records", {
                    "id": "fav%04di%07d" % (user, number), "user": "user%011d" % user, "experience": "ticketmaster",
                    "item_id": item, "title": json.loads('"%s"' % title), "item": json.loads(cell)}, tokens[user - 1])
                ok = status == 200 or (status == 400 and "validation_not_unique" in json.dumps(answer))
            check(ok, "%s, user %d, item %s" % (side, user, item), status, answer)
    each_user(len(tokens), hold_all)


def toggle_values(users, item_json):
    """pgbench's -D options for bench/sql/toggle-*.sql, NUL-separated: the cell item with ITEM for its id, and the
    FavoriteSnapshot the service makes of it (FavoriteSnapshot(item:))."""
    item = dict(json.load(open(item_json)), id="ITEM")
    event = item.get("event") or {}
    snapshot = {"experience": item["experience"], "itemId": "ITEM", "title": item["title"],
                "subtitle": item.get("subtitle"), "imageURL": item.get("imageURL"), "localDate": event.get("localDate"),
                "localTime": event.get("localTime"),
                "price": min((r.get("min") or r.get("max") for r in event.get("priceRanges") or []), default=None)}
    compact = lambda value: json.dumps(value, separators=(",", ":"))
    values = dict(snapshot, users=users, item=compact(item), snapshot=compact(dict(snapshot, item=item)))
    print("".join("-D\0%s=%s\0" % (key, "" if value is None else value) for key, value in values.items()), end="")


def figures(path, baseline, *pairs):
    """bench_wrk's rounds (scripts/lib/bench.sh) per workload, connections and side: the median 2xx/s and the rounds'
    min–max, the median p99, the other answers and socket errors of all rounds, the ratio to the baseline side's
    median; each SIDE/OTHER adds their ratios."""
    runs = collections.defaultdict(list)
    for line in open(path):
        key, *values = line.split()
        runs[tuple(key.split("/"))].append(values)
    median = {key: statistics.median_low(float(v[0]) for v in rounds) for key, rounds in runs.items()}
    rate = lambda value: "%.1f" % value if value < 100 else "{:,.0f}".format(value)
    print("%-12s %5s  %-14s %9s  %-15s %7s %7s %7s %7s  %s" % (
        "workload", "conns", "side", "2xx/s", "rounds", "p99 ms", "others", "socket", "÷ " + baseline, "kinds"))
    groups = list(dict.fromkeys((workload, conns) for workload, _, conns in runs))
    for (workload, side, conns), rounds in sorted(runs.items(), key=lambda item: groups.index(item[0][::2])):
        rps, p99 = [float(v[0]) for v in rounds], [float(v[1]) for v in rounds if v[1] != "-"]
        base, kinds = median.get((workload, baseline, conns)), collections.Counter()
        for kind, _, n in (kind.replace("=", "x").partition("x") for v in rounds for kind in v[4].split(",") if v[4] != "-"):
            kinds[kind] += int(n)
        print("%-12s %5s  %-14s %9s  %-15s %7s %7d %7d %7s  %s" % (
            workload, conns, side, rate(median[workload, side, conns]), rate(min(rps)) + "–" + rate(max(rps)),
            "%.1f" % statistics.median_low(p99) if p99 else "-", sum(int(v[2]) for v in rounds),
            sum(int(v[3]) for v in rounds), "%.2f" % (median[workload, side, conns] / base) if base and
            side != baseline else "", " ".join("%s×%d" % item for item in sorted(kinds.items()))))
    for side, other in (pair.split("/") for pair in pairs):
        for workload, conns in groups:
            if median.get((workload, side, conns)) and median.get((workload, other, conns)):
                print("%s ÷ %s, %s at %s connections: %.2f" % (
                    side, other, workload, conns, median[workload, side, conns] / median[workload, other, conns]))


def cpu(path):
    """"REQUEST GROUP MS" lines: their medians, a row per request."""
    runs = collections.defaultdict(list)
    for line in open(path):
        request, group, ms = line.split()
        runs[request, group].append(float(ms))
    groups = list(dict.fromkeys(group for _, group in runs))
    print("%-18s" % "request" + "".join(" %14s" % group for group in groups) + " %9s" % "total")
    for request in dict.fromkeys(request for request, _ in runs):
        values = [statistics.median(runs[request, group] or [0]) for group in groups]
        print("%-18s" % request + "".join(" %14.3f" % value for value in values) + " %9.3f" % sum(values))


def percentiles(values, *points):
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [cuts[point - 1] for point in points]


def hostile(base, email, password, sign_ins, count):
    """Sign-ins one at a time, alone, then each with `count` sign-ups of the largest allowed size (a 64 KiB body: the
    longest address and password, padded with JSON whitespace), each from an address of its own, so that no
    per-client limit helps and only the line of password checks does."""
    def sign_in():  # ms
        started = time.perf_counter()
        call("POST", base + "/v1/auth/login", {"email": email, "password": password}, None, "192.0.2.1", retry=False)
        return (time.perf_counter() - started) * 1000
    text = json.dumps({"email": "x" * 64 + "@" + "a" * 63 + "." + "b" * 63 + "." + "c" * 61,
                       "password": "\U0001F600\U0001F601" * 128, "experience": "ticketmaster"}, ensure_ascii=False)
    big = (text[:-1] + " " * (65536 - len(text.encode()) - 1) + "}").encode()
    alone, attacked, answers = [sign_in() for _ in range(int(sign_ins))], [], collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(int(count)) as pool:
        for n in range(int(sign_ins)):
            attacks = [pool.submit(call, "POST", base + "/v1/auth/signup", big, None,
                                   "10.%d.%d.%d" % (client, n // 250, n % 250 + 1), False)
                       for client in range(1, int(count) + 1)]
            attacked.append(sign_in())
            answers.update(attack.result()[0] for attack in attacks)
    quiet, loud = percentiles(alone, 50, 99), percentiles(attacked, 50, 99)
    print("sign-in, ms (%s one at a time): alone p50 %.1f p99 %.1f; each with %s hostile sign-ups p50 %.1f p99 %.1f;"
          " ratio %.2f, %.2f" % (sign_ins, *quiet, count, *loud, loud[0] / quiet[0], loud[1] / quiet[1]))
    print("hostile answers: " + " ".join("%d×%d" % item for item in sorted(answers.items())))


def resets(base, count, pattern):
    """Every answer's status, body and headers (but the request id and date) must be the same for both kinds."""
    host, port = base.split("//")[1].split(":")
    connection, answers = http.client.HTTPConnection(host, int(port)), set()
    timings = {"member": [], "stranger": []}
    for n, kind in enumerate(random.sample(["member", "stranger"] * int(count), 2 * int(count))):
        email = pattern.format(n % 50 + 1) if kind == "member" else "nobody-%s@example.com" % uuid.uuid4().hex[:12]
        started = time.perf_counter()
        connection.request("POST", "/v1/auth/password-reset", json.dumps({"email": email}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        answers.add((response.status, response.read(), tuple(sorted((k.lower(), v) for k, v in response.getheaders()
                                                                     if k.lower() not in ("x-request-id", "date")))))
        timings[kind].append((time.perf_counter() - started) * 1000)
        if len(answers) > 1:
            sys.exit("answers differ: %s" % answers)
    print("%-28s %6s %8s %8s %8s %8s" % ("password reset requests", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms"))
    for kind, label in (("member", "address with an account"), ("stranger", "address without one")):
        print("%-28s %6d %8.2f %8.2f %8.2f %8.2f" % (label, len(timings[kind]), *percentiles(timings[kind], 50, 90, 99),
                                                     statistics.fmean(timings[kind])))
    a, b = sorted(timings["member"]), sorted(timings["stranger"])
    # The Kolmogorov-Smirnov distance: the largest gap between the two cumulative curves (0 when identical).
    ks = max(abs(bisect.bisect_right(a, x) / len(a) - bisect.bisect_right(b, x) / len(b)) for x in a + b)
    print("answers identical (status %d); median difference %.2f ms; KS distance %.3f" % (
        next(iter(answers))[0], statistics.median(a) - statistics.median(b), ks))


if __name__ == "__main__":
    globals()[sys.argv[1].replace("-", "_")](*sys.argv[2:])
