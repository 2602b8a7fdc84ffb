"""Set-up steps of bench/peers.sh that take JSON in and out: users, tokens, PocketBase's collection, favorites.

    setup.py ours-tokens AUTH_URL USERS PASSWORD OUT         sign users peer-1…peer-N up (or in, when they exist)
    setup.py pocketbase-init URL SUPERUSER_EMAIL PASSWORD     request log off, rate limits checked, `favorites` created
    setup.py pocketbase-tokens URL USERS PASSWORD OUT         create users user00000000001… (once) and sign them in
    setup.py items CATALOG_URL TOKEN OUT ITEM…                each item's title, as the catalog gives it
    setup.py fill ours|pocketbase URL TOKENS ITEMS            every user holds every item (the lists' starting point)

Tokens are written one per line, line n for user n, which is what bench/peers/peers.lua reads. Standard library only.
"""
import concurrent.futures
import json
import sys
import urllib.error
import urllib.request

AGENT = "favoriteme-bench-peers"  # the User-Agent of every request, wrk's too: PocketBase keys its login origins on it


def call(method, url, body=None, token=None, address=None):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    request.add_header("User-Agent", AGENT)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if address:
        request.add_header("X-Real-IP", address)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    return status, json.loads(text) if text else None


def address(user):
    """The user's own client address, as in peers.lua (the sign-in throttle counts per address)."""
    return "10.77.%d.%d" % (user // 256, user % 256)


def email(user):
    return "peer-%d@example.com" % user


def each_user(users, work):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(work, range(1, users + 1)))


def write_tokens(path, tokens):
    with open(path, "w") as file:
        file.write("".join(token + "\n" for token in tokens))


def ours_tokens(auth, users, password, out):
    def sign_in(user):
        body = {"email": email(user), "password": password}
        status, answer = call("POST", auth + "/v1/auth/login", body, address=address(user))
        if status == 401:  # not signed up yet
            status, answer = call("POST", auth + "/v1/auth/signup", dict(body, experience="ticketmaster"),
                                  address=address(user))
        if status not in (200, 201):
            sys.exit("auth-service: %s for %s: %s" % (status, email(user), answer))
        return answer["accessToken"]
    write_tokens(out, each_user(int(users), sign_in))


def pocketbase_init(base, superuser, password):
    status, answer = call("POST", base + "/api/collections/_superusers/auth-with-password",
                          {"identity": superuser, "password": password})
    if status != 200:
        sys.exit("PocketBase superuser sign-in: %s %s" % (status, answer))
    token = answer["token"]
    # Our services log no request at LOG_LEVEL=warning; PocketBase's request log (a row per request in its
    # auxiliary database) goes off too, so neither side writes a log line per request.
    status, settings = call("PATCH", base + "/api/settings", {"logs": {"maxDays": 0}}, token)
    if status != 200 or settings["rateLimits"]["enabled"]:
        sys.exit("PocketBase settings: %s, rate limits on: the sign-in figures would be its limiter's" % status)
    collection = {
        "name": "favorites", "type": "base",
        "fields": [
            {"name": "user", "type": "relation", "collectionId": "_pb_users_auth_", "maxSelect": 1,
             "required": True, "cascadeDelete": True},
            {"name": "experience", "type": "text", "required": True, "max": 64},
            {"name": "item_id", "type": "text", "required": True, "max": 128},
            {"name": "title", "type": "text", "required": True, "max": 300},
            {"name": "favorited_at", "type": "autodate", "onCreate": True, "onUpdate": False},
        ],
        # One favorite per (user, experience, item), as our view's primary key; it also serves the per-user list.
        "indexes": ["CREATE UNIQUE INDEX idx_favorites_user_item ON favorites (user, experience, item_id)"],
        # A user lists, reads, creates and deletes their own records only; nobody updates one.
        "listRule": "user = @request.auth.id", "viewRule": "user = @request.auth.id",
        "createRule": "user = @request.auth.id", "deleteRule": "user = @request.auth.id", "updateRule": None,
    }
    status, answer = call("POST", base + "/api/collections", collection, token)
    if status != 200:
        sys.exit("PocketBase collection: %s %s" % (status, answer))


def pocketbase_tokens(base, users, password, out):
    def sign_in(user):
        body = {"id": "user%011d" % user, "email": email(user), "password": password, "passwordConfirm": password}
        call("POST", base + "/api/collections/users/records", body)  # 400 when the user exists already
        status, answer = call("POST", base + "/api/collections/users/auth-with-password",
                              {"identity": email(user), "password": password})
        if status != 200:
            sys.exit("PocketBase sign-in: %s for %s: %s" % (status, email(user), answer))
        return answer["token"]
    write_tokens(out, each_user(int(users), sign_in))


def items(catalog, token, out, *ids):
    with open(out, "w") as file:
        for item in ids:
            status, answer = call("GET", "%s/v1/catalog/ticketmaster/items/%s" % (catalog, item), token=token)
            if status != 200:
                sys.exit("catalog-proxy: %s for %s: %s" % (status, item, answer))
            file.write("%s\t%s\n" % (item, json.dumps(answer["title"])[1:-1]))  # JSON-escaped, for peers.lua


def fill(side, base, tokens_path, items_path):
    tokens = open(tokens_path).read().split()
    item_ids = [line.split("\t")[0] for line in open(items_path).read().splitlines()]
    titles = [json.loads('"%s"' % line.split("\t", 1)[1]) for line in open(items_path).read().splitlines()]

    def hold_all(user):
        for number, (item, title) in enumerate(zip(item_ids, titles), start=1):
            if side == "ours":  # a PUT of a favorite the user has writes nothing
                status, answer = call("PUT", "%s/v1/favorites/ticketmaster/%s" % (base, item), token=tokens[user - 1])
                ok = status in (200, 201)
            else:  # the record ids peers.lua uses; a second create is refused by the unique index (400)
                record = {"id": "fav%04di%07d" % (user, number), "user": "user%011d" % user,
                          "experience": "ticketmaster", "item_id": item, "title": title}
                status, answer = call("POST", base + "/api/collections/favorites/records", record, tokens[user - 1])
                ok = status == 200 or (status == 400 and "validation_not_unique" in json.dumps(answer))
            if not ok:
                sys.exit("%s: %s for user %d, item %s: %s" % (side, status, user, item, answer))
    each_user(len(tokens), hold_all)


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"ours-tokens": ours_tokens, "pocketbase-init": pocketbase_init, "pocketbase-tokens": pocketbase_tokens,
     "items": items, "fill": fill}[command](*arguments)
