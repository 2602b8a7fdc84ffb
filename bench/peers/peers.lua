-- wrk script for bench/peers.sh: one workload against one side, both chosen by the environment, so that both sides
-- get the same client, the same users in the same order and the same headers.
--   PEERS_SIDE       ours | pocketbase
--   PEERS_WORKLOAD   toggle | list | ids | signin
--   PEERS_TOKENS     one access token per line, line n for user n (toggle, list, ids)
--   PEERS_ITEMS      "item-id<TAB>title" per line: the five items every user toggles (toggle)
--   PEERS_STATE      each thread's request count, carried from one run to the next (toggle, see below)
--   PEERS_RESULT     where done() writes what the run got, one line (see done() below)
--   PEERS_USERS (200), PEERS_THREADS (wrk's -t, 2), PEERS_PASSWORD and PEERS_ONE_ADDRESS (signin),
--   PEERS_EXPERIENCE (ticketmaster)
local function env(name) local value = os.getenv(name); if value ~= "" then return value end end
local side, workload = env("PEERS_SIDE"), env("PEERS_WORKLOAD")
local users = tonumber(env("PEERS_USERS") or "200")
local thread_count = tonumber(env("PEERS_THREADS") or "2")
local experience = env("PEERS_EXPERIENCE") or "ticketmaster"
local password = env("PEERS_PASSWORD") or ""
local per_thread = math.floor(users / thread_count)

local function lines(path)
    local result, file = {}, path and io.open(path)
    if file then
        for line in file:lines() do result[#result + 1] = line end
        file:close()
    end
    return result
end

-- Each thread's count of requests so far, by thread id: read in every Lua state, written back by done().
local saved = {}
for _, line in ipairs(lines(env("PEERS_STATE"))) do
    local id, count = line:match("^(%d+) (%d+)$")
    saved[tonumber(id)] = tonumber(count)
end

local threads = {}
function setup(thread)
    thread:set("id", #threads)
    threads[#threads + 1] = thread
end

local tokens, items, titles = {}, {}, {}
-- Globals, so that done() can read them from each thread: the request count, the 2xx answers and every other status.
counter, ok, statuses = 0, 0, {}
function init(args)
    tokens = lines(env("PEERS_TOKENS"))
    for _, line in ipairs(lines(env("PEERS_ITEMS"))) do
        local item, title = line:match("^([^\t]+)\t(.*)$")
        items[#items + 1], titles[#titles + 1] = item, title
    end
    counter = saved[id] or 0
    -- wrk calls request() once on its first thread to check the script, and sends nothing for that call: it must
    -- not use up a toggle, or that pair's next request would find it in the state the unsent one would have left.
    checking = id == 0
end

-- This thread's users in turn: thread t takes users t+1, t+1+T, t+1+2T, … (T threads), so no two threads share one.
local function user_of(k) return id + 1 + thread_count * (k % per_thread) end

local function headers(user)
    local h = { ["User-Agent"] = "favoriteme-bench-peers", ["Content-Type"] = "application/json" }
    if user and tokens[user] then h["Authorization"] = "Bearer " .. tokens[user] end
    return h
end

local function pocketbase_list(fields)
    return "/api/collections/favorites/records?filter=experience%3D%27" .. experience .. "%27" .. fields ..
           "&perPage=500&skipTotal=1"
end

-- The k-th toggle of a thread: its users in turn, then the next item; one pass over the thread's users × items adds
-- them all, the next pass removes them all, and so on. With k carried between runs (PEERS_STATE), every request finds
-- the pair in the state it expects: a PUT for an item that is not a favorite, a DELETE for one that is.
local function toggle(k)
    local user = user_of(k)
    local item = math.floor(k / per_thread) % #items + 1
    local adding = math.floor(k / (per_thread * #items)) % 2 == 0
    local h = headers(user)
    if side == "ours" then
        h["Idempotency-Key"] = "peers-" .. id .. "-" .. k  -- unique: k never repeats for a thread
        return wrk.format(adding and "PUT" or "DELETE", "/v1/favorites/" .. experience .. "/" .. items[item], h)
    end
    -- PocketBase: the record's id is the client's (15 characters of [a-z0-9]), so a delete needs no lookup first.
    local record = string.format("fav%04di%07d", user, item)
    if not adding then return wrk.format("DELETE", "/api/collections/favorites/records/" .. record, h) end
    local body = string.format('{"id":"%s","user":"user%011d","experience":"%s","item_id":"%s","title":"%s"}',
                               record, user, experience, items[item], titles[item])
    return wrk.format("POST", "/api/collections/favorites/records", h, body)
end

local function signin(k)
    local user = user_of(k)
    local h = headers(nil)
    -- Each user signs in from an address of its own (auth-service trusts X-Real-IP from the loopback, as from its
    -- gateway): 200 phones, not one client, so the per-address sign-in throttle sees what it would in production.
    -- PEERS_ONE_ADDRESS leaves it out: every sign-in then comes from 127.0.0.1.
    if not env("PEERS_ONE_ADDRESS") then
        h["X-Real-IP"] = string.format("10.77.%d.%d", math.floor(user / 256), user % 256)
    end
    local email = string.format("peer-%d@example.com", user)
    if side == "ours" then
        return wrk.format("POST", "/v1/auth/login", h,
                          string.format('{"email":"%s","password":"%s"}', email, password))
    end
    return wrk.format("POST", "/api/collections/users/auth-with-password", h,
                      string.format('{"identity":"%s","password":"%s"}', email, password))
end

function request()
    local k = counter
    if checking then checking = false else counter = counter + 1 end
    if workload == "toggle" then return toggle(k) end
    if workload == "signin" then return signin(k) end
    local h = headers(user_of(k))
    if workload == "list" then
        if side == "ours" then return wrk.format("GET", "/v1/favorites?experience=" .. experience, h) end
        return wrk.format("GET", pocketbase_list("&sort=-favorited_at"), h)
    end
    if side == "ours" then return wrk.format("GET", "/v1/favorites/ids?experience=" .. experience, h) end
    return wrk.format("GET", pocketbase_list("&fields=item_id&sort=item_id"), h)
end

-- Only 2xx answers are throughput: wrk's own count takes every answer, and its "Non-2xx or 3xx" line only those >= 400.
function response(status, headers, body)
    if status >= 200 and status < 300 then ok = ok + 1 else statuses[status] = (statuses[status] or 0) + 1 end
end

-- PEERS_RESULT gets "<2xx answers> <seconds> <other answers> <socket errors> <statuses> <socket errors by kind>",
-- statuses as "404x3,503x1" and the kinds as "connect=0,read=0,write=0,timeout=0" ("-" when there were none).
function done(summary, latency, requests)
    local state, counts, successes, others, listed = {}, {}, 0, 0, {}
    for _, thread in ipairs(threads) do
        state[#state + 1] = thread:get("id") .. " " .. thread:get("counter")
        successes = successes + thread:get("ok")
        for status, n in pairs(thread:get("statuses")) do counts[status] = (counts[status] or 0) + n end
    end
    for status, n in pairs(counts) do
        others = others + n
        listed[#listed + 1] = status .. "x" .. n
    end
    table.sort(listed)
    local e = summary.errors
    local socket = e.connect + e.read + e.write + e.timeout
    if env("PEERS_STATE") then
        local file = io.open(env("PEERS_STATE"), "w")
        file:write(table.concat(state, "\n"), "\n")
        file:close()
    end
    if env("PEERS_RESULT") then
        local file = io.open(env("PEERS_RESULT"), "w")
        file:write(string.format("%d %.6f %d %d %s %s\n", successes, summary.duration / 1e6, others, socket,
                                 #listed > 0 and table.concat(listed, ",") or "-",
                                 socket > 0 and string.format("connect=%d,read=%d,write=%d,timeout=%d", e.connect,
                                                              e.read, e.write, e.timeout) or "-"))
        file:close()
    end
end
