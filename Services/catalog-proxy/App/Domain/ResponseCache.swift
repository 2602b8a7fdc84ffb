import Foundation
import Logging

/// How long a cached response is served, per route.
struct CachePolicy: Sendable, Equatable {
    /// Served as fresh for this long.
    var ttl: TimeInterval
    /// After that, served at once while one background request refreshes it.
    var staleWhileRevalidate: TimeInterval
    /// After that, served only when the upstream fails, marked as stale.
    var staleIfError: TimeInterval
}

/// A normalized response body as the proxy serves it.
struct CachedBody: Sendable, Equatable {
    var body: Data
    /// False for a page some of whose items could not be fetched: served to the requests that waited for it, never
    /// kept, so the next request tries the missing items again.
    var isComplete = true
}

/// In-process cache of normalized responses: bounded by bytes with least-recently-used eviction, a TTL per route,
/// one upstream request for any number of concurrent identical misses, stale-while-revalidate and stale-if-error,
/// and "no such item" answers remembered for `absentFor` (an id that does not exist costs one upstream call, not one
/// per request).
///
/// Identical misses are joined by the ``Coalescer`` (under `response|<key>`). The clock is injected so that expiry is
/// tested without waiting, and the validator (`tag`, ServiceKit's `ETag.of`) so that this stays free of crypto.
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
        /// The body's strong validator.
        var etag: String
        var freshness: Freshness
        /// Seconds since the copy was fetched (the `Age` header).
        var age: Int
        /// Seconds the copy stays fresh (for `Cache-Control: max-age`).
        var remainingTTL: Int
        /// A miss that waited for a fetch another request had started, instead of starting its own.
        var coalesced = false
    }

    /// A body with its validator, made once per load.
    private struct Tagged: Sendable {
        var value: CachedBody
        var etag: String
    }

    private struct Entry {
        var value: CachedBody
        var etag: String
        var storedAt: Date
        var policy: CachePolicy
        var older: String?
        var newer: String?
        var cost: Int { value.body.count + 256 }  // the body plus the bookkeeping around it
    }

    let capacityBytes: Int
    let absentFor: TimeInterval
    let now: @Sendable () -> Date
    /// A body's strong validator.
    nonisolated let tag: @Sendable (Data) -> String
    private let coalescer: Coalescer
    private var entries: [String: Entry] = [:]
    /// Keys the upstream said do not exist, with that answer and until when it stands.
    private var absent: [String: (error: any Error, until: Date)] = [:]
    /// Bound on remembered absences: past it, the expired ones go, and if that is not enough, all of them.
    static let maximumAbsent = 10_000
    private var oldest: String?
    private var newest: String?
    private(set) var usedBytes = 0

    init(capacityBytes: Int, absentFor: TimeInterval = 0, tag: @escaping @Sendable (Data) -> String,
         coalescer: Coalescer = Coalescer(), now: @escaping @Sendable () -> Date = Date.init) {
        self.capacityBytes = capacityBytes
        self.absentFor = absentFor
        self.tag = tag
        self.coalescer = coalescer
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
                coalescer.start("response|\(key)", loading(key, policy: policy, load: load))
                return lookup(entry, .revalidating, now: now)
            }
        }
        do {
            let (loaded, joined) = try await coalescer.once("response|\(key)", loading(key, policy: policy, load: load))
            var answer = lookup(Entry(value: loaded.value, etag: loaded.etag, storedAt: now, policy: policy), .miss,
                                now: now)
            answer.coalesced = joined
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

    /// `load` as the one load of `key` on this replica (``Coalescer``, under `response|<key>`): its body tagged, and
    /// stored when it is complete.
    private func loading(_ key: String, policy: CachePolicy, load: @escaping @Sendable () async throws -> CachedBody)
        -> @Sendable () async throws -> Tagged
    {
        let tag = tag
        return {
            let value = try await load()
            let loaded = Tagged(value: value, etag: tag(value.body))
            if value.isComplete { await self.store(key, loaded, policy: policy) }
            return loaded
        }
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
        return Lookup(value: entry.value, etag: entry.etag, freshness: freshness, age: Int(age),
                      remainingTTL: max(0, Int((entry.policy.ttl - age).rounded(.down))))
    }

    // MARK: Storage: a dictionary threaded with a doubly linked recency list, so every operation is O(1).

    private func store(_ key: String, _ loaded: Tagged, policy: CachePolicy) {
        remove(key)
        let entry = Entry(value: loaded.value, etag: loaded.etag, storedAt: now(), policy: policy, older: newest,
                          newer: nil)
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

extension ResponseCache {
    /// The cached or loaded body for `key`. An upstream "no such item" drops the copy; another failure with no copy in
    /// the cache serves `fallback`'s (the last copy any replica kept), as stale.
    ///
    /// A load joined in flight spends the share of the user who started it; refused for that share, it is run once
    /// more as this caller's own (if the share spent was this caller's, it is refused again before any upstream call).
    func lookup(_ key: String, policy: CachePolicy, logger: Logger,
                load: @escaping @Sendable () async throws -> CachedBody,
                fallback: @Sendable () async -> (body: CachedBody, age: Int)? = { nil }) async throws -> Lookup
    {
        do {
            let value = { try await self.value(for: key, policy: policy,
                                               isDefinitive: { ($0 as? UpstreamFailure) == .notFound }, load: load) }
            let lookup: Lookup
            do {
                lookup = try await value()
            } catch UpstreamFailure.userShareSpent {
                lookup = try await value()
            }
            if lookup.freshness == .stale {
                logger.warning("upstream failed; serving the last good copy",
                               metadata: ["age_seconds": "\(lookup.age)"])
            }
            return lookup
        } catch let failure as UpstreamFailure {
            if failure != .notFound {
                // Never the upstream's body: Ticketmaster echoes the API key in some of its errors.
                logger.warning("upstream request failed", metadata: ["failure": "\(failure)"])
                if let (body, age) = await fallback() {
                    logger.warning("serving the last copy seen of the item", metadata: ["age_seconds": "\(age)"])
                    return Lookup(value: body, etag: tag(body.body), freshness: .stale, age: age, remainingTTL: 0)
                }
            }
            throw failure
        }
    }
}
