"""Live updates, ours beside PocketBase's realtime API (bench/streams.sh): for each count of devices, every user of
TOKENS opens that many streams (200 at a time; ours spread over the replicas' URLs), then WRITES writes are made, each
by another user (a favorite, then its removal), 100 a second. Prints a row per count: streams, the time from a write's
answer to its event on each of its user's streams (p50, p99, max; an event before the answer counts 0), events lost
after 5 s, unexpected events, and the servers' (PIDS) resident memory per stream. HTTP/1.1 over asyncio.

    streams.py ours|pocketbase URL[,URL…] TOKENS "DEVICES…" WRITES PIDS
"""
import asyncio
import json
import random
import statistics
import sys
import time
import urllib.parse

ITEMS = ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "vvG18Z4m501KZN", "vv1k8Z4E0YG7MA0I", "1Ae7ZfdGkSp307Y"]


def rss_kib(pids):
    return sum(next(int(line.split()[1]) for line in open("/proc/%s/status" % pid) if line.startswith("VmRSS:"))
               for pid in pids.split(","))


async def request(url, method="GET", token=None, body=None, stream=False):
    """One request on a connection of its own: its answer's JSON, or for a stream its reader, writer and head (the
    writer kept: a writer collected closes its connection)."""
    parts = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port, limit=1 << 20)
    payload = b"" if body is None else json.dumps(body).encode()
    writer.write(("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nContent-Type: application/json\r\n%s%s\r\n" % (
        method, parts.path + ("?" + parts.query if parts.query else ""), parts.netloc, len(payload),
        "Authorization: Bearer %s\r\n" % token if token else "",
        "Accept: text/event-stream\r\n" if stream else "Connection: close\r\n")).encode() + payload)
    head = await reader.readuntil(b"\r\n\r\n")
    if head.split()[1] not in (b"200", b"201", b"204"):
        raise RuntimeError("%s %s: %s" % (method, url, head[:200] + await reader.read(300)))
    return (reader, writer, head) if stream else json.loads(await reader.read() or b"null")


async def stream(url, token, on_event, opened):
    """One Server-Sent Events response: on_event(type, data) per event; `opened` fails unless it answers 200."""
    try:
        reader, writer, head = await request(url, token=token, stream=True)
    except Exception as error:
        return opened.set_exception(error)
    chunked, text = b"transfer-encoding: chunked" in head.lower(), ""
    while chunk := (await reader.readexactly(int(await reader.readline() or b"0", 16) + 2))[:-2] if chunked else \
            await reader.read(65536):
        text += chunk.decode()
        while "\n\n" in text:
            block, text = text.split("\n\n", 1)
            fields = {name: value.lstrip(" ") for name, _, value in
                      (line.partition(":") for line in block.split("\n") if line and line[0] != ":")}
            if fields:
                on_event(fields.get("event", "message"), fields.get("data", ""))
    writer.close()


async def measure(side, urls, tokens, per_user, writes, pids, held, records):
    ours, users = side == "ours", len(tokens)
    pending = {}  # (user, kind, item) -> [[answered at, streams still to receive it, arrived before the answer], …]
    latencies, unexpected, client_ids = [], [0], {}

    def on_event(device, opened):
        def handle(event, data):
            if event in ("ready", "PB_CONNECT"):
                client_ids[device] = event == "PB_CONNECT" and json.loads(data)["clientId"]
                return opened.done() or opened.set_result(None)
            if event not in ("change", "favorites"):
                return
            data = json.loads(data)
            key = (device[0], data["kind"], data["itemId"]) if ours else (device[0], {"create": "added", "delete":
                                                                           "removed"}[data["action"]], data["record"]["item_id"])
            entry = next((entry for entry in pending.get(key, []) if device in entry[1]), None)
            if entry is None:
                unexpected[0] += 1
            else:
                entry[1].discard(device)
                entry[2] += entry[0] is None
                if entry[0] is not None:
                    latencies.append(max(0.0, time.monotonic() - entry[0]) * 1000)
        return handle

    before, tasks, devices = rss_kib(pids), [], [(user, copy) for user in range(users) for copy in range(per_user)]
    for start in range(0, len(devices), 200):  # as phones come online
        batch, openings = devices[start:start + 200], [asyncio.get_running_loop().create_future() for _ in range(200)]
        tasks += [asyncio.create_task(stream(
            urls[(user * per_user + copy) % len(urls)] + "/v1/favorites/stream" if ours else urls[0] + "/api/realtime",
            ours and tokens[user], on_event((user, copy), opened), opened)) for (user, copy), opened in zip(batch, openings)]
        await asyncio.gather(*openings[:len(batch)])
        if not ours:
            await asyncio.gather(*(request(urls[0] + "/api/realtime", "POST", tokens[device[0]], {
                "clientId": client_ids[device], "subscriptions": ["favorites"]}) for device in batch))
    await asyncio.sleep(2)
    after, order = rss_kib(pids), random.sample(range(users), users)  # writes in flight: different users

    async def write(number):
        user = order[number % users]
        removing = user in held
        item = held.pop(user) if removing else random.choice(ITEMS)
        entry = [None, {(user, copy) for copy in range(per_user)}, 0]
        pending.setdefault((user, "removed" if removing else "added", item), []).append(entry)
        if ours:
            await request(urls[number % len(urls)] + "/v1/favorites/ticketmaster/" + item,
                          "DELETE" if removing else "PUT", tokens[user])
        elif removing:
            await request(urls[0] + "/api/collections/favorites/records/" + records.pop(user), "DELETE", tokens[user])
        else:
            records[user] = (await request(urls[0] + "/api/collections/favorites/records", "POST", tokens[user], {
                "user": "user%011d" % (user + 1), "experience": "ticketmaster", "item_id": item, "title": item}))["id"]
        entry[0] = time.monotonic()
        latencies.extend([0.0] * entry[2])  # events that came before the answer: no wait at all
        if not removing:
            held[user] = item

    for start in range(0, writes, 50):  # 100 a second, 50 at most in flight
        writers = []
        for number in range(start, min(writes, start + 50)):
            writers.append(asyncio.create_task(write(number)))
            await asyncio.sleep(0.01)
        await asyncio.gather(*writers)
    await asyncio.sleep(5)
    for task in tasks:
        task.cancel()
    lost = sum(len(entry[1]) for entries in pending.values() for entry in entries)
    cuts = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else [0.0] * 99
    print("%-11s %8d %9.1f %9.1f %9.1f %12s %11d %14.1f" % (
        side, len(devices), cuts[49], cuts[98], max(latencies, default=0), "%d/%d" % (lost, per_user * writes),
        unexpected[0], (after - before) / len(devices)), flush=True)


async def main(side, urls, tokens, devices, writes, pids):
    held, records = {}, {}  # user -> the item favorited now (one at a time), and its PocketBase record
    for per_user in map(int, devices.split()):
        await measure(side, urls.split(","), open(tokens).read().split(), per_user, int(writes), pids, held, records)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
