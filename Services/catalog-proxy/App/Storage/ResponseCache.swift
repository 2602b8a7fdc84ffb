import Foundation
import ServiceKit

/// How long a cached response is served, per route.
struct CachePolicy: Sendable, Equatable {
    /// Served as fresh for this long.
    var ttl: TimeInterval
    /// After that, served at once while one background request refreshes it.
    var staleWhileRevalidate: TimeInterval
    /// After that, served only when the upstream fails, marked as stale.
    var staleIfError: TimeInterval
}

/// A normalized response body as the proxy serves it, with its strong validator.
struct CachedBody: Sendable, Equatable {
    var body: Data
    var etag: String
    /// False for a page some of whose items could not be fetched: served to the requests that waited for it, never
    /// kept, so the next request tries the missing items again.
    var isComplete: Bool

    init(body: Data, isComplete: Bool = true) {
        self.body = body
        self.isComplete = isComplete
        etag = ETag.of(body)
    }
}

/// In-process cache of normalized responses: bounded by bytes with least-recently-used eviction, a TTL per route,
/// one upstream request for any number of concurrent identical misses, stale-while-revalidate and stale-if-error,
/// and "no such item" answers remembered for `absentFor` (an id that does not exist costs one upstream call, not one
/// per request).
///
/// The clock is injected so that expiry is tested without waiting.
actor ResponseCache {
    enum Freshness: String, Sendable {
        /// Served from the cache within its TTL.
        case hit
        /// Fetched from the upstream for this request (or a concurrent identical one).
        case miss
        /// Past its TTL, served while a background request refreshes it.
        case revalidating
        /// The upstream failed; this is the last good copy.
        case stale
    }

    struct Lookup: Sendable {
        var value: CachedBody
        var freshness: Freshness
        /// Seconds since the copy was fetched (the `Age` header).
        var age: Int
        /// Seconds the copy stays fresh (for `Cache-Control: max-age`).
        var remainingTTL: Int
        /// A miss that waited for a fetch another request had started, instead of starting its own.
        var coalesced = false
    }

    private struct Entry {
        var value: CachedBody
        var storedAt: Date
        var policy: CachePolicy
        var older: String?
        var newer: String?
        var cost: Int { value.body.count + 256 }  // the body plus the bookkeeping around it
    }

    let capacityBytes: Int
    let absentFor: TimeInterval
    let now: @Sendable () -> Date
    private var entries: [String: Entry] = [:]
    /// Keys the upstream said do not exist, with that answer and until when it stands.
    private var absent: [String: (error: any Error, until: Date)] = [:]
    /// Bound on remembered absences: past it, the expired ones go, and if that is not enough, all of them.
    static let maximumAbsent = 10_000
    private var oldest: String?
    private var newest: String?
    private(set) var usedBytes = 0
    private var inFlight: [String: Task<CachedBody, any Error>] = [:]

    init(capacityBytes: Int, absentFor: TimeInterval = 0, now: @escaping @Sendable () -> Date = Date.init) {
        self.capacityBytes = capacityBytes
        self.absentFor = absentFor
        self.now = now
    }

    /// The cached value for `key`, or the result of `load` (run once for all concurrent callers of the same key).
    /// An error for which `isDefinitive` is true (the item does not exist) drops the cached copy instead of falling
    /// back to it, and is the answer for `key` for ``absentFor``.
    func value(
        for key: String, policy: CachePolicy, isDefinitive: @Sendable (any Error) -> Bool = { _ in false },
        load: @escaping @Sendable () async throws -> CachedBody
    ) async throws -> Lookup {
        let now = now()
        if let known = absent[key] {
            if now < known.until { throw known.error }
            absent[key] = nil
        }
        if let entry = entries[key] {
            let age = now.timeIntervalSince(entry.storedAt)
            if age < entry.policy.ttl {
                touch(key)
                return lookup(entry, .hit, now: now)
            }
            if age < entry.policy.ttl + entry.policy.staleWhileRevalidate {
                touch(key)
                if inFlight[key] == nil { _ = start(key, policy: policy, load: load) }
                return lookup(entry, .revalidating, now: now)
            }
        }
        let joined = inFlight[key]
        let task = joined ?? start(key, policy: policy, load: load)
        do {
            let value = try await task.value
            var answer = lookup(Entry(value: value, storedAt: now, policy: policy), .miss, now: now)
            answer.coalesced = joined != nil
            return answer
        } catch {
            if isDefinitive(error) {
                remove(key)
                rememberAbsent(key, error, now: now)
                throw error
            }
            // Stale-if-error: the last good copy, if it is not too old, beats an error.
            if let entry = entries[key],
               now.timeIntervalSince(entry.storedAt) < entry.policy.ttl + entry.policy.staleIfError {
                touch(key)
                return lookup(entry, .stale, now: now)
            }
            throw error
        }
    }

    /// Runs `load` as the one request for `key`; its result is stored when it succeeds.
    private func start(
        _ key: String, policy: CachePolicy, load: @escaping @Sendable () async throws -> CachedBody
    ) -> Task<CachedBody, any Error> {
        let task = Task {
            defer { self.finish(key) }
            let value = try await load()
            if value.isComplete { self.store(key, value: value, policy: policy) }
            return value
        }
        inFlight[key] = task
        return task
    }

    private func finish(_ key: String) {
        inFlight[key] = nil
    }

    private func rememberAbsent(_ key: String, _ error: any Error, now: Date) {
        guard absentFor > 0 else { return }
        if absent.count >= Self.maximumAbsent {
            absent = absent.filter { now < $0.value.until }
            if absent.count >= Self.maximumAbsent { absent.removeAll() }
        }
        absent[key] = (error, now.addingTimeInterval(absentFor))
    }

    private func lookup(_ entry: Entry, _ freshness: Freshness, now: Date) -> Lookup {
        let age = max(0, now.timeIntervalSince(entry.storedAt))
        return Lookup(value: entry.value, freshness: freshness, age: Int(age),
                      remainingTTL: max(0, Int((entry.policy.ttl - age).rounded(.down))))
    }

    // MARK: Storage: a dictionary threaded with a doubly linked recency list, so every operation is O(1).

    func store(_ key: String, value: CachedBody, policy: CachePolicy) {
        remove(key)
        let entry = Entry(value: value, storedAt: now(), policy: policy, older: newest, newer: nil)
        guard entry.cost <= capacityBytes else { return }  // larger than the whole cache: never stored
        if let newest { entries[newest]?.newer = key }
        entries[key] = entry
        newest = key
        if oldest == nil { oldest = key }
        usedBytes += entry.cost
        while usedBytes > capacityBytes, let victim = oldest { remove(victim) }
    }

    private func touch(_ key: String) {
        guard newest != key, let entry = entries[key] else { return }
        unlink(key, entry)
        entries[key]?.older = newest
        entries[key]?.newer = nil
        if let newest { entries[newest]?.newer = key }
        newest = key
        if oldest == nil { oldest = key }
    }

    private func remove(_ key: String) {
        guard let entry = entries[key] else { return }
        unlink(key, entry)
        entries[key] = nil
        usedBytes -= entry.cost
    }

    private func unlink(_ key: String, _ entry: Entry) {
        if let older = entry.older { entries[older]?.newer = entry.newer } else { oldest = entry.newer }
        if let newer = entry.newer { entries[newer]?.older = entry.older } else { newest = entry.older }
    }

    /// Keys from least to most recently used (for tests).
    func recency() -> [String] {
        var keys: [String] = []
        var cursor = oldest
        while let key = cursor {
            keys.append(key)
            cursor = entries[key]?.newer
        }
        return keys
    }

    var count: Int { entries.count }
}
