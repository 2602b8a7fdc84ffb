-- wrk's script for every benchmark, so that each side of a comparison gets the same client, the same users in the
-- same order and the same headers. Chosen by the environment (scripts/lib/bench.sh's bench_wrk sets WRK_RESULT):
--   WRK_WORKLOAD  get (the URL wrk is given; the default) | toggle | list | ids | signin
--   WRK_SIDE      ours | pocketbase (toggle, list, ids, signin)
--   WRK_TOKEN     one access token for every request (get); WRK_TOKENS: a file, line n user n's token
--   WRK_ITEMS     "item-id<TAB>title<TAB>cell item JSON" per line: the five items every user toggles
--   WRK_STATE     each thread's request count, carried from one run to the next (toggle, see toggle())
--   WRK_USERS (the tokens' count), WRK_PASSWORD and WRK_ONE_ADDRESS (signin: every sign-in from 127.0.0.1)
-- done() writes one line to WRK_RESULT: "2xx/s p99-ms other-answers socket-errors kinds 2xx-answers". Throughput
-- counts 2xx answers only (wrk's own count takes every answer); the p99 is of every answer; kinds lists the other
-- statuses and socket errors ("404x3,timeout=1", or "-").
local function env(name) local value = os.getenv(name); if value ~= "" then return value end end
local side, workload, password = env("WRK_SIDE"), env("WRK_WORKLOAD") or "get", env("WRK_PASSWORD") or ""

local function lines(path)
    local result, file = {}, path and io.open(path)
    if file then
        for line in file:lines() do result[#result + 1] = line end
        file:close()
    end
    return result
end

local saved, threads = {}, {}  -- each thread's request count from the previous run, by thread id
for _, line in ipairs(lines(env("WRK_STATE"))) do
    local id, count = line:match("^(%d+) (%d+)$")
    saved[tonumber(id)] = tonumber(count)
end
function setup(thread)
    thread:set("id", #threads)
    threads[#threads + 1] = thread
end

local tokens, items, titles, cells, users, per_thread = {}, {}, {}, {}, 0, 0
counter, ok, statuses = 0, 0, {}  -- globals, so that done() can read them from each thread
function init(args)
    tokens = lines(env("WRK_TOKENS"))
    for _, line in ipairs(lines(env("WRK_ITEMS"))) do
        local item, title, cell = line:match("^([^\t]+)\t([^\t]*)\t(.*)$")
        items[#items + 1], titles[#titles + 1], cells[#cells + 1] = item, title, cell
    end
    users = tonumber(env("WRK_USERS") or #tokens)
    per_thread = math.max(1, math.floor(users / #threads))
    counter = saved[id] or 0
    -- wrk calls request() once on its first thread to check the script and sends nothing for that call: it must not
    -- use up a toggle, or that pair's next request would find it in the state the unsent one would have left.
    checking = id == 0
end

-- This thread's users in turn: thread t takes users t+1, t+1+T, t+1+2T, … (T threads), so no two threads share one.
local function user_of(k) return id + 1 + #threads * (k % per_thread) end

local function headers(user)
    local h = { ["User-Agent"] = "favoriteme-bench", ["Content-Type"] = "application/json" }
    local token = env("WRK_TOKEN") or (user and tokens[user])
    if token then h["Authorization"] = "Bearer " .. token end
    return h
end

local function pocketbase_list(fields)
    return "/api/collections/favorites/records?filter=experience%3D%27ticketmaster%27" .. fields ..
           "&perPage=500&skipTotal=1"
end

-- The k-th toggle of a thread: its users in turn, then the next item; one pass over the thread's users × items adds
-- them all, the next removes them all. With k carried between runs (WRK_STATE), every request finds its pair in the
-- state it expects: a favorite for an item that is not one, a removal for one that is.
local function toggle(k)
    local user, item = user_of(k), math.floor(k / per_thread) % #items + 1
    local adding, h = math.floor(k / (per_thread * #items)) % 2 == 0, headers(user_of(k))
    if side == "ours" then
        h["Idempotency-Key"] = "bench-" .. id .. "-" .. k  -- unique: k never repeats for a thread
        return wrk.format(adding and "PUT" or "DELETE", "/v1/favorites/ticketmaster/" .. items[item], h)
    end
    -- PocketBase: the record's id is the client's (15 characters of [a-z0-9]), so a removal needs no lookup first.
    -- The record carries the cell item ours keeps (catalog-proxy's `view=cell` answer), so both sides move equal bytes.
    local record = string.format("fav%04di%07d", user, item)
    if not adding then return wrk.format("DELETE", "/api/collections/favorites/records/" .. record, h) end
    return wrk.format("POST", "/api/collections/favorites/records", h, string.format(
        '{"id":"%s","user":"user%011d","experience":"ticketmaster","item_id":"%s","title":"%s","item":%s}',
        record, user, items[item], titles[item], cells[item]))
end

-- Each user signs in from an address of its own (auth-service trusts X-Real-IP from the loopback, as from its
-- gateway): 200 phones, not one client, so the per-address throttle sees what it would in production.
local function signin(k)
    local user, h = user_of(k), headers(nil)
    if not env("WRK_ONE_ADDRESS") then h["X-Real-IP"] = string.format("10.77.%d.%d", math.floor(user / 256), user % 256) end
    local email = string.format("peer-%d@example.com", user)
    if side == "ours" then
        return wrk.format("POST", "/v1/auth/login", h, string.format('{"email":"%s","password":"%s"}', email, password))
    end
    return wrk.format("POST", "/api/collections/users/auth-with-password", h,
                      string.format('{"identity":"%s","password":"%s"}', email, password))
end

function request()
    local k = counter
    if checking then checking = false else counter = counter + 1 end
    if workload == "get" then return wrk.format(nil, nil, headers(nil)) end
    if workload == "toggle" then return toggle(k) end
    if workload == "signin" then return signin(k) end
    local h, ours = headers(user_of(k)), side == "ours"
    if workload == "list" then
        return wrk.format("GET", ours and "/v1/favorites?experience=ticketmaster" or pocketbase_list("&sort=-favorited_at"), h)
    end
    return wrk.format("GET", ours and "/v1/favorites/ids?experience=ticketmaster" or
                             pocketbase_list("&fields=item_id&sort=item_id"), h)
end

function response(status, headers, body)
    if status >= 200 and status < 300 then ok = ok + 1 else statuses[status] = (statuses[status] or 0) + 1 end
end

function done(summary, latency, requests)
    local state, counts, successes, others, kinds = {}, {}, 0, 0, {}
    for _, thread in ipairs(threads) do
        state[#state + 1] = thread:get("id") .. " " .. thread:get("counter")
        successes = successes + thread:get("ok")
        for status, n in pairs(thread:get("statuses")) do counts[status] = (counts[status] or 0) + n end
    end
    for status, n in pairs(counts) do others, kinds[#kinds + 1] = others + n, status .. "x" .. n end
    local e = summary.errors
    for _, kind in ipairs({ "connect", "read", "write", "timeout" }) do
        if e[kind] > 0 then kinds[#kinds + 1] = kind .. "=" .. e[kind] end
    end
    table.sort(kinds)
    if env("WRK_STATE") then
        local file = io.open(env("WRK_STATE"), "w")
        file:write(table.concat(state, "\n"), "\n")
        file:close()
    end
    local file = io.open(env("WRK_RESULT"), "w")
    file:write(string.format("%.2f %.2f %d %d %s %d\n", successes / (summary.duration / 1e6),
                             latency:percentile(99) / 1000, others, e.connect + e.read + e.write + e.timeout,
                             #kinds > 0 and table.concat(kinds, ",") or "-", successes))
    file:close()
end
