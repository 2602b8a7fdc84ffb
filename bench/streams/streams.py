"""Live updates, ours beside PocketBase's realtime API: N open streams, writes by the streams' users, and the time from
a write's answer to its event on every stream of that user. Run by bench/streams.sh:

    streams.py ours|pocketbase URL[,URL…] TOKENS STREAMS_PER_USER WRITES PIDS

Opens STREAMS_PER_USER streams for each user of TOKENS (ours spread over the replicas' URLs), 200 at a time, reads the
resident memory of PIDS (the servers) before and 2 s after, then makes WRITES writes, each by another user (a favorite,
then its removal), 100 a second, and waits 5 s for the events. Prints a table row: streams, p50/p99/max latency (an
event that comes before the answer counts 0), events lost and expected, unexpected events, KiB per stream. Standard
library only: HTTP/1.1 over asyncio.
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
               for pid in pids)


async def connect(url, method, token=None, body=None, accept=None):
    """Sends one request on a connection of its own; returns its reader and writer."""
    parts = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port, limit=1 << 20)
    payload = b"" if body is None else json.dumps(body).encode()
    head = "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nContent-Type: application/json\r\n" % (
        method, parts.path + ("?" + parts.query if parts.query else ""), parts.netloc, len(payload))
    head += ("Authorization: Bearer %s\r\n" % token if token else "") + ("Accept: %s\r\n" % accept if accept else "")
    writer.write(head.encode() + (b"Connection: close\r\n" if accept is None else b"") + b"\r\n" + payload)
    return reader, writer


async def request(url, method="GET", token=None, body=None):
    reader, writer = await connect(url, method, token, body)
    data = await reader.read()
    writer.close()
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[1]


async def stream(url, token, on_event, opened):
    """One Server-Sent Events response: on_event(type, data) per event; `opened` fails if it is not a 200."""
    try:
        reader, writer = await connect(url, "GET", token, accept="text/event-stream")
        status = (await reader.readline()).split()[1]
        headers = b""
        while (line := await reader.readline()) not in (b"\r\n", b""):
            headers += line.lower()
        if status != b"200":
            raise RuntimeError("stream answered %s" % status.decode())
    except Exception as error:
        opened.set_exception(error)
        return
    chunked, text = b"transfer-encoding: chunked" in headers, ""
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


async def main(side, urls, tokens_path, per_user, writes, pids):
    tokens, urls, pids, ours = open(tokens_path).read().split(), urls.split(","), pids.split(","), side == "ours"
    users = len(tokens)
    pending = {}  # (user, kind, item) -> [[answered at, streams still to receive it, arrived before the answer], …]
    latencies, unexpected, client_ids = [], [0], {}
    streams_of = {user: [] for user in range(users)}

    def on_event(user, copy, opened):
        def handle(event, data):
            if event in ("ready", "PB_CONNECT"):
                client_ids[user, copy] = event == "PB_CONNECT" and json.loads(data)["clientId"]
                return opened.done() or opened.set_result(None)
            if ours and event == "change":
                change = json.loads(data)
                key = (user, change["kind"], change["itemId"])
            elif not ours and event == "favorites":
                message = json.loads(data)
                key = (user, {"create": "added", "delete": "removed"}.get(message["action"]), message["record"]["item_id"])
            else:
                return
            entry = next((entry for entry in pending.get(key, []) if (user, copy) in entry[1]), None)
            if entry is None:
                unexpected[0] += 1
                return
            entry[1].discard((user, copy))
            if entry[0] is None:
                entry[2] += 1
            else:
                latencies.append(max(0.0, time.monotonic() - entry[0]) * 1000)
        return handle

    before, tasks = rss_kib(pids), []
    everyone = [(user, copy) for user in range(users) for copy in range(per_user)]
    for start in range(0, len(everyone), 200):  # opened 200 at a time, as phones come online
        batch, openings = everyone[start:start + 200], []
        for user, copy in batch:
            opened = asyncio.get_running_loop().create_future()
            url = urls[(user * per_user + copy) % len(urls)] + "/v1/favorites/stream" if ours else urls[0] + "/api/realtime"
            tasks.append(asyncio.create_task(stream(url, tokens[user] if ours else None, on_event(user, copy, opened), opened)))
            openings.append(opened)
            streams_of[user].append((user, copy))
        await asyncio.gather(*openings)
        if not ours:
            async def subscribe(user, copy):
                status, body = await request(urls[0] + "/api/realtime", "POST", tokens[user],
                                             {"clientId": client_ids[user, copy], "subscriptions": ["favorites"]})
                if status != 204:
                    raise RuntimeError("PocketBase subscription: %d %s" % (status, body[:200]))
            await asyncio.gather(*(subscribe(user, copy) for user, copy in batch))
    await asyncio.sleep(2)
    after = rss_kib(pids)

    held, record_ids = {}, {}  # user -> the item favorited now (one at a time), and its PocketBase record

    async def read_held(user):
        """What an earlier run left the user holding: its first write removes it, so every write changes something."""
        path = "/v1/favorites/ids?experience=ticketmaster" if ours else "/api/collections/favorites/records?perPage=10"
        status, body = await request(urls[0] + path, token=tokens[user])
        if status != 200:
            raise RuntimeError("%s: reading user %d's favorites: %d" % (side, user, status))
        found = json.loads(body)["itemIds" if ours else "items"]
        if found:
            held[user] = found[0] if ours else found[0]["item_id"]
            record_ids[user] = None if ours else found[0]["id"]

    for start in range(0, users, 100):
        await asyncio.gather(*(read_held(user) for user in range(start, min(users, start + 100))))
    order = random.sample(range(users), users)  # 50 writes in flight are by 50 different users

    async def write(number):
        user = order[number % users]
        removing = user in held
        item = held.pop(user) if removing else random.choice(ITEMS)
        entry = [None, set(streams_of[user]), 0]
        pending.setdefault((user, "removed" if removing else "added", item), []).append(entry)
        if ours:
            status, _ = await request(urls[number % len(urls)] + "/v1/favorites/ticketmaster/" + item,
                                      "DELETE" if removing else "PUT", tokens[user])
        elif removing:
            status, _ = await request(urls[0] + "/api/collections/favorites/records/" + record_ids.pop(user), "DELETE",
                                      tokens[user])
        else:
            status, body = await request(urls[0] + "/api/collections/favorites/records", "POST", tokens[user], {
                "user": "user%011d" % (user + 1), "experience": "ticketmaster", "item_id": item, "title": item})
            record_ids[user] = status == 200 and json.loads(body)["id"]
        if status not in (200, 201, 204):
            raise RuntimeError("%s write: %d" % (side, status))
        entry[0] = time.monotonic()
        latencies.extend([0.0] * entry[2])  # events that came before the answer: no wait at all
        if not removing:
            held[user] = item

    writers = []
    for number in range(writes):
        writers.append(asyncio.create_task(write(number)))
        await asyncio.sleep(0.01)
        if len(writers) >= 50:
            await asyncio.gather(*writers)
            writers = []
    await asyncio.gather(*writers)
    await asyncio.sleep(5)
    for task in tasks:
        task.cancel()
    lost = sum(len(entry[1]) for entries in pending.values() for entry in entries)
    expected = sum(len(streams_of[user]) * len(entries) for (user, _, _), entries in pending.items())
    cuts = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else [0.0] * 99
    print("%-11s %8d %9.1f %9.1f %9.1f %12s %11d %14.1f" % (
        side, len(everyone), cuts[49], cuts[98], max(latencies, default=0), "%d/%d" % (lost, expected), unexpected[0],
        (after - before) / len(everyone)))


if __name__ == "__main__":
    side, urls, tokens, per_user, writes, pids = sys.argv[1:7]
    asyncio.run(main(side, urls, tokens, int(per_user), int(writes), pids))
