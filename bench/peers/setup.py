"""Users, tokens and records for bench/peers.sh and bench/streams.sh, on both sides, with the standard library only.

    setup.py ours-tokens AUTH_URL USERS PASSWORD OUT     sign up (or in) peer-N@example.com on auth-service
    setup.py pocketbase-init URL SUPERUSER PASSWORD      its request log off, the `favorites` collection
    setup.py pocketbase-tokens URL USERS PASSWORD OUT    create (or sign in) the same users on PocketBase
    setup.py items CATALOG_URL TOKEN OUT ID…             "id<TAB>title<TAB>cell item" per item (catalog-proxy's view=cell)
    setup.py fill ours|pocketbase URL TOKENS ITEMS       every user holds every item (the lists' starting point)

Tokens are written one per line, line n for user n, as bench/wrk.lua reads them.
"""
import concurrent.futures
import json
import sys
import urllib.error
import urllib.request


def call(method, url, body=None, token=None, address=None):
    headers = {"Content-Type": "application/json", "User-Agent": "favoriteme-bench"}  # wrk.lua's: PocketBase keys
    headers.update({"Authorization": "Bearer " + token} if token else {})            # its login origins on it
    headers.update({"X-Real-IP": address} if address else {})
    request = urllib.request.Request(url, json.dumps(body).encode() if body is not None else None, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    return status, json.loads(text) if text else None


def each_user(users, work):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(work, range(1, int(users) + 1)))


def check(ok, what, status, answer):
    if not ok:
        sys.exit("%s: %s %s" % (what, status, answer))
    return answer


def write_tokens(path, tokens):
    open(path, "w").write("".join(token + "\n" for token in tokens))


def ours_tokens(auth, users, password, out):
    def sign_in(user):  # from the user's own address, as wrk.lua signs in: the throttle counts per address
        body, address = {"email": "peer-%d@example.com" % user, "password": password}, "10.77.%d.%d" % divmod(user, 256)
        status, answer = call("POST", auth + "/v1/auth/login", body, address=address)
        if status == 401:  # not signed up yet
            status, answer = call("POST", auth + "/v1/auth/signup", dict(body, experience="ticketmaster"), address=address)
        return check(status in (200, 201), "auth-service, " + body["email"], status, answer)["accessToken"]
    write_tokens(out, each_user(users, sign_in))


def pocketbase_init(base, superuser, password):
    status, answer = call("POST", base + "/api/collections/_superusers/auth-with-password",
                          {"identity": superuser, "password": password})
    token = check(status == 200, "PocketBase superuser sign-in", status, answer)["token"]
    # Our services log no request at LOG_LEVEL=warning; PocketBase's request log (a row per request) goes off too.
    status, settings = call("PATCH", base + "/api/settings", {"logs": {"maxDays": 0}}, token)
    check(status == 200 and not settings["rateLimits"]["enabled"], "PocketBase settings (rate limits must be off)",
          status, settings)
    status, answer = call("POST", base + "/api/collections", {
        "name": "favorites", "type": "base",
        "fields": [
            {"name": "user", "type": "relation", "collectionId": "_pb_users_auth_", "maxSelect": 1,
             "required": True, "cascadeDelete": True},
            {"name": "experience", "type": "text", "required": True, "max": 64},
            {"name": "item_id", "type": "text", "required": True, "max": 128},
            {"name": "title", "type": "text", "required": True, "max": 300},
            {"name": "item", "type": "json", "maxSize": 65536},  # the cell item ours keeps
            {"name": "favorited_at", "type": "autodate", "onCreate": True, "onUpdate": False},
        ],
        # One favorite per (user, experience, item), as our view's primary key; it also serves the per-user list.
        "indexes": ["CREATE UNIQUE INDEX idx_favorites_user_item ON favorites (user, experience, item_id)"],
        # A user lists, reads, creates and deletes their own records only; nobody updates one.
        "listRule": "user = @request.auth.id", "viewRule": "user = @request.auth.id",
        "createRule": "user = @request.auth.id", "deleteRule": "user = @request.auth.id", "updateRule": None,
    }, token)
    check(status == 200, "PocketBase collection", status, answer)


def pocketbase_tokens(base, users, password, out):
    def sign_in(user):
        email = "peer-%d@example.com" % user
        call("POST", base + "/api/collections/users/records",  # 400 when the user exists already
             {"id": "user%011d" % user, "email": email, "password": password, "passwordConfirm": password})
        status, answer = call("POST", base + "/api/collections/users/auth-with-password",
                              {"identity": email, "password": password})
        return check(status == 200, "PocketBase sign-in, " + email, status, answer)["token"]
    write_tokens(out, each_user(users, sign_in))


def items(catalog, token, out, *ids):
    with open(out, "w") as file:
        for item in ids:
            status, answer = call("GET", "%s/v1/catalog/ticketmaster/items/%s?view=cell" % (catalog, item), token=token)
            check(status == 200, "catalog-proxy, " + item, status, answer)
            file.write("%s\t%s\t%s\n" % (item, json.dumps(answer["title"])[1:-1], json.dumps(answer, separators=(",", ":"))))


def fill(side, base, tokens_path, items_path):
    tokens = open(tokens_path).read().split()
    held = [line.rstrip("\n").split("\t") for line in open(items_path)]

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


if __name__ == "__main__":
    {"ours-tokens": ours_tokens, "pocketbase-init": pocketbase_init, "pocketbase-tokens": pocketbase_tokens,
     "items": items, "fill": fill}[sys.argv[1]](*sys.argv[2:])
