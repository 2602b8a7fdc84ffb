-- wrk's script for every benchmark, so that both sides of a comparison get the same client, users, order and headers.
-- The environment chooses (bench_wrk in scripts/lib/bench.sh runs 2 threads and sets WRK_RESULT):
--   WRK_WORKLOAD  get (the URL wrk is given; the default) | toggle | list | ids | signin; WRK_SIDE ours | pocketbase
--   WRK_TOKEN     one access token for every request, or WRK_TOKENS: a file, line n user n's token
--   WRK_ITEMS     "item-id<TAB>title<TAB>cell item JSON" per line: the items every user toggles
--   WRK_STATE     each thread's request count, carried from one run to the next (toggle)
--   WRK_USERS (the tokens' count), WRK_PASSWORD and WRK_ONE_ADDRESS (signin: every sign-in from 127.0.0.1)
-- done() writes one line to WRK_RESULT: "2xx/s p99-ms other-answers socket-errors kinds 2xx-answers". Only 2xx answers
-- are throughput (wrk's own count takes every answer); the p99 is of every answer; kinds: "404x3,timeout=1" or "-".
local function env(name) local value = os.getenv(name); if value ~= "" then return value end end
local side, workload, ours = env("WRK_SIDE"), env("WRK_WORKLOAD") or "get", env("WRK_SIDE") == "ours"
local function lines(path)
    local result, file = {}, path and io.open(path)
    for line in file and file:lines() or function() end do result[#result + 1] = line end
    return result
end

local saved, threads = {}, {}  -- each thread's request count from the previous run, by thread id
for _, line in ipairs(lines(env("WRK_STATE"))) do saved[tonumber(line:match("^%d+"))] = tonumber(line:match("%d+$")) end
function setup(thread)
    thread:set("id", #threads)
    threads[#threads + 1] = thread
end

local tokens, items, per_thread = {}, {}, 1
counter, ok, statuses = 0, 0, {}  -- globals, so that done() can read them from each thread
function init(args)
    tokens = lines(env("WRK_TOKENS"))
    for _, line in ipairs(lines(env("WRK_ITEMS"))) do items[#items + 1] = { line:match("^([^\t]+)\t([^\t]*)\t(.*)$") } end
    per_thread = math.max(1, math.floor(tonumber(env("WRK_USERS") or #tokens) / 2))
    counter = saved[id] or 0
    -- wrk calls request() once on its first thread to check the script and sends nothing for that call: it must not
    -- use up a toggle, or that pair's next request would find it in the state the unsent one would have left.
    checking = id == 0
end

-- This thread's users in turn: thread t takes users t+1, t+3, t+5, …, so no two threads share one.
local function user_of(k) return id + 1 + 2 * (k % per_thread) end
local function headers(user)
    local h, token = { ["User-Agent"] = "favoriteme-bench", ["Content-Type"] = "application/json" },
                     env("WRK_TOKEN") or tokens[user]
    if token then h["Authorization"] = "Bearer " .. token end
    return h
end

-- The k-th toggle of a thread: its users in turn, then the next item; one pass over the thread's users × items adds
-- them all, the next removes them all. With k carried between runs, every request finds its pair in the state it
-- expects. Ours sends an Idempotency-Key, as the client library does; a PocketBase record has the client's id (15
-- characters of [a-z0-9]), so a removal needs no lookup, and the cell item ours keeps (equal payloads).
local function toggle(k)
    local user, number = user_of(k), math.floor(k / per_thread) % #items + 1
    local adding, h, item = math.floor(k / (per_thread * #items)) % 2 == 0, headers(user), items[number]
    local record = string.format("fav%04di%07d", user, number)
    if ours then
        h["Idempotency-Key"] = "bench-" .. id .. "-" .. k  -- unique: k never repeats for a thread
        return wrk.format(adding and "PUT" or "DELETE", "/v1/favorites/ticketmaster/" .. item[1], h)
    elseif not adding then
        return wrk.format("DELETE", "/api/collections/favorites/records/" .. record, h)
    end
    return wrk.format("POST", "/api/collections/favorites/records", h, string.format(
        '{"id":"%s","user":"user%011d","experience":"ticketmaster","item_id":"%s","title":"%s","item":%s}', record,
        user, item[1], item[2], item[3]))
end

-- Each user signs in from an address of its own (auth-service trusts X-Real-IP from the loopback, as from its
-- gateway): 200 phones, not one client, so the per-address throttle sees what it would in production.
local function signin(k)
    local user, h = user_of(k), headers(nil)
    if not env("WRK_ONE_ADDRESS") then h["X-Real-IP"] = string.format("10.77.%d.%d", math.floor(user / 256), user % 256) end
    return wrk.format("POST", ours and "/v1/auth/login" or "/api/collections/users/auth-with-password", h, string.format(
        '{"%s":"peer-%d@example.com","password":"%s"}', ours and "email" or "identity", user, env("WRK_PASSWORD")))
end

local paths = {
    list = { "/v1/favorites?experience=ticketmaster", "&sort=-favorited_at" },
    ids = { "/v1/favorites/ids?experience=ticketmaster", "&fields=item_id&sort=item_id" },
}
function request()
    local k = counter
    if checking then checking = false else counter = counter + 1 end
    if workload == "get" then return wrk.format(nil, nil, headers(nil)) end
    if workload == "toggle" then return toggle(k) end
    if workload == "signin" then return signin(k) end
    return wrk.format("GET", ours and paths[workload][1] or "/api/collections/favorites/records?filter=experience%3D" ..
                      "%27ticketmaster%27&perPage=500&skipTotal=1" .. paths[workload][2], headers(user_of(k)))
end

function response(status, headers, body)
    if status >= 200 and status < 300 then ok = ok + 1 else statuses[status] = (statuses[status] or 0) + 1 end
end

function done(summary, latency, requests)
    local state, counts, successes, others, kinds, e = {}, {}, 0, 0, {}, summary.errors
    for _, thread in ipairs(threads) do
        state[#state + 1] = thread:get("id") .. " " .. thread:get("counter") .. "\n"
        successes = successes + thread:get("ok")
        for status, n in pairs(thread:get("statuses")) do counts[status] = (counts[status] or 0) + n end
    end
    for status, n in pairs(counts) do others, kinds[#kinds + 1] = others + n, status .. "x" .. n end
    for kind, n in pairs(e) do if n > 0 and kind ~= "status" then kinds[#kinds + 1] = kind .. "=" .. n end end
    table.sort(kinds)
    for path, text in pairs({ [env("WRK_STATE") or "/dev/null"] = table.concat(state), [env("WRK_RESULT")] =
            string.format("%.2f %.2f %d %d %s %d\n", successes / summary.duration * 1e6, latency:percentile(99) / 1000,
                          others, e.connect + e.read + e.write + e.timeout, #kinds > 0 and table.concat(kinds, ",") or "-",
                          successes) }) do
        local file = io.open(path, "w")
        file:write(text)
        file:close()
    end
end
