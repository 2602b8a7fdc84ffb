"""Live updates, ours beside PocketBase's realtime API: N open streams, writes by the streams' users, and the time from
a write's acknowledgement to its event on every stream of that user. Run by bench/streams.sh.

    streams.py ours URL,URL… TOKENS STREAMS_PER_USER WRITES PIDS
    streams.py pocketbase URL TOKENS STREAMS_PER_USER WRITES PIDS

Opens STREAMS_PER_USER streams for each user of TOKENS (one token per line; ours spread over the replicas' URLs),
waits until all are open, reads the resident memory of PIDS (the servers' processes), then makes WRITES writes, each
by a random user (a favorite, then its removal), paced at 100 per second, and waits for the events. Prints one line of
JSON: streams, memory before and after opening them, latencies (ms) from each write's answer to each of its events,
and how many events were expected and never came. Standard library only: HTTP/1.1 over asyncio, chunked bodies read
by hand.
"""
import asyncio
import json
import random
import sys
import time
import urllib.parse

ITEMS = ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "vvG18Z4m501KZN", "vv1k8Z4E0YG7MA0I", "1Ae7ZfdGkSp307Y"]


def rss_kib(pids):
    total = 0
    for pid in pids:
        with open("/proc/%s/status" % pid) as status:
            total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return total


async def request(url, method="GET", token=None, body=None):
    """One request on a connection of its own: (status, body bytes)."""
    parts = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    payload = b"" if body is None else json.dumps(body).encode()
    head = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n" % (
        method, parts.path + ("?" + parts.query if parts.query else ""), parts.netloc, len(payload))
    if body is not None:
        head += "Content-Type: application/json\r\n"
    if token:
        head += "Authorization: Bearer %s\r\n" % token
    writer.write(head.encode() + b"\r\n" + payload)
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


class Stream:
    """One Server-Sent Events response, read on its own connection; calls `on_event(type, data)` per event."""

    def __init__(self, url, token, on_event):
        self.url, self.token, self.on_event = url, token, on_event
        self.opened = asyncio.get_running_loop().create_future()

    async def run(self):
        parts = urllib.parse.urlsplit(self.url)
        try:
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port, limit=1 << 20)
        except OSError as error:
            self.opened.set_exception(error)
            return
        head = "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n" % (
            parts.path + ("?" + parts.query if parts.query else ""), parts.netloc)
        if self.token:
            head += "Authorization: Bearer %s\r\n" % self.token
        writer.write(head.encode() + b"\r\n")
        status = (await reader.readline()).split()[1]
        chunked = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            chunked |= line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower()
        if status != b"200":
            self.opened.set_exception(RuntimeError("stream answered %s" % status.decode()))
            return
        text = ""
        while True:
            if chunked:
                size = int((await reader.readline()).strip() or b"0", 16)
                if size == 0:
                    break
                chunk = await reader.readexactly(size + 2)
                text += chunk[:-2].decode()
            else:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                text += chunk.decode()
            while "\n\n" in text:
                block, text = text.split("\n\n", 1)
                fields = {}
                for line in block.split("\n"):
                    if line and not line.startswith(":") and ":" in line:
                        name, value = line.split(":", 1)
                        fields[name] = fields.get(name, "") + value.lstrip(" ")
                if "event" in fields or "data" in fields:
                    self.on_event(self, fields.get("event", "message"), fields.get("data", ""))
        writer.close()


async def main(side, urls, tokens_path, per_user, writes, pids):
    tokens = open(tokens_path).read().split()
    urls = urls.split(",")
    pids = pids.split(",")
    users = len(tokens)
    pending = {}  # (user, key) -> [[acknowledged at, streams still to receive it, arrivals before the answer], …]
    latencies, unexpected = [], 0
    streams_of = {user: [] for user in range(users)}

    def on_event(stream, event, data):
        nonlocal unexpected
        if event in ("ready",):
            stream.opened.done() or stream.opened.set_result(None)
            return
        if event == "PB_CONNECT":
            stream.client_id = json.loads(data)["clientId"]
            stream.opened.done() or stream.opened.set_result(None)
            return
        if side == "ours" and event == "change":
            change = json.loads(data)
            key = (change["kind"], change["itemId"])
        elif side == "pocketbase" and event == "favorites":
            message = json.loads(data)
            key = ({"create": "added", "delete": "removed"}.get(message["action"]), message["record"]["item_id"])
        else:
            return
        now = time.monotonic()
        entry = next((entry for entry in pending.get((stream.user, key), []) if stream in entry[1]), None)
        if entry is None:
            unexpected += 1
            return
        entry[1].discard(stream)
        if entry[0] is not None:
            latencies.append(max(0.0, now - entry[0]) * 1000)
        else:
            entry[2].append(now)  # arrived before the write's answer was read

    streams, tasks = [], []
    for user in range(users):
        for copy in range(per_user):
            if side == "ours":
                stream = Stream(urls[(user * per_user + copy) % len(urls)] + "/v1/favorites/stream", tokens[user],
                                on_event)
            else:
                stream = Stream(urls[0] + "/api/realtime", None, on_event)
            stream.user = user
            streams.append(stream)
            streams_of[user].append(stream)
    before = rss_kib(pids)
    for start in range(0, len(streams), 200):  # opened 200 at a time, as phones come online
        batch = streams[start:start + 200]
        tasks += [asyncio.create_task(stream.run()) for stream in batch]
        await asyncio.gather(*(stream.opened for stream in batch))
        if side == "pocketbase":
            async def subscribe(stream):
                status, body = await request(urls[0] + "/api/realtime", "POST", tokens[stream.user],
                                             {"clientId": stream.client_id, "subscriptions": ["favorites"]})
                if status != 204:
                    raise RuntimeError("PocketBase subscription: %d %s" % (status, body[:200]))
            await asyncio.gather(*(subscribe(stream) for stream in batch))
    await asyncio.sleep(2)
    after = rss_kib(pids)

    held = {}  # user -> item currently favorited (one at a time), for the toggle
    record_ids = {}

    async def read_held(user):
        """What an earlier run left the user holding: its first write removes it, so every write changes something."""
        if side == "ours":
            status, body = await request(urls[0] + "/v1/favorites/ids?experience=ticketmaster", token=tokens[user])
            ids = json.loads(body)["itemIds"] if status == 200 else []
            if ids:
                held[user] = ids[0]
        else:
            status, body = await request(urls[0] + "/api/collections/favorites/records?perPage=10", token=tokens[user])
            records = json.loads(body)["items"] if status == 200 else []
            if records:
                held[user], record_ids[user] = records[0]["item_id"], records[0]["id"]
        if status != 200:
            raise RuntimeError("%s: reading user %d's favorites: %d" % (side, user, status))

    for start in range(0, users, 100):
        await asyncio.gather(*(read_held(user) for user in range(start, min(users, start + 100))))

    order = random.sample(range(users), users)  # 50 writes in flight are by 50 different users

    async def write(number):
        user = order[number % users]
        removing = user in held
        item = held.pop(user) if removing else random.choice(ITEMS)
        key = ("removed" if removing else "added", item)
        entry = [None, set(streams_of[user]), []]
        pending.setdefault((user, key), []).append(entry)
        if side == "ours":
            url = urls[number % len(urls)] + "/v1/favorites/ticketmaster/" + item
            status, _ = await request(url, "DELETE" if removing else "PUT", tokens[user])
            ok = status in (200, 201, 204)
        elif removing:
            status, _ = await request(urls[0] + "/api/collections/favorites/records/" + record_ids.pop(user), "DELETE",
                                      tokens[user])
            ok = status == 204
        else:
            status, body = await request(urls[0] + "/api/collections/favorites/records", "POST", tokens[user], {
                "user": "user%011d" % (user + 1), "experience": "ticketmaster", "item_id": item, "title": item})
            ok = status == 200
            if ok:
                record_ids[user] = json.loads(body)["id"]
        if not ok:
            raise RuntimeError("%s write: %d" % (side, status))
        acknowledged = time.monotonic()
        entry[0] = acknowledged
        latencies.extend(0.0 for _ in entry[2])  # events that came before the answer: no wait at all
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
    lost = sum(len(entry[1]) for entries in pending.values() for entry in entries)
    expected = sum(len(streams_of[user]) * len(entries) for (user, _), entries in pending.items())
    for task in tasks:
        task.cancel()
    latencies.sort()

    def percentile(p):
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * p))], 1) if latencies else None

    print(json.dumps({
        "side": side, "streams": len(streams), "users": users, "writes": writes, "events_expected": expected,
        "events_lost": lost, "events_unexpected": unexpected, "p50_ms": percentile(0.5), "p99_ms": percentile(0.99),
        "max_ms": round(latencies[-1], 1) if latencies else None, "rss_before_kib": before, "rss_after_kib": after,
        "kib_per_stream": round((after - before) / len(streams), 1),
    }))


if __name__ == "__main__":
    side, urls, tokens, per_user, writes, pids = sys.argv[1:7]
    asyncio.run(main(side, urls, tokens, int(per_user), int(writes), pids))
