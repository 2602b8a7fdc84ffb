@testable import CatalogProxy
import AsyncHTTPClient
import Contracts
import CoreMetrics
import Foundation
import HTTPTypes
import Locking
import Logging
import Postgres
import ServiceKit
import TestSupport
import Testing

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let current = Locked(Date(timeIntervalSince1970: 1_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Counts calls from concurrent tasks.
final class CallCounter: Sendable {
    private let calls = Locked(0)
    var count: Int { calls.withLock { $0 } }
    @discardableResult func increment() -> Int {
        calls.withLock { count in
            count += 1
            return count
        }
    }
}

@Suite struct ResponseCacheTests {
    let policy = CachePolicy(ttl: 10, staleWhileRevalidate: 10, staleIfError: 100)
    struct Down: Error {}

    static func body(_ text: String, size: Int = 0) -> CachedBody {
        CachedBody(body: Data((text + String(repeating: " ", count: size)).utf8))
    }

    @Test func hitsWithinTheTTLThenRevalidatesInTheBackground() async throws {
        let clock = ManualClock()
        let cache = ResponseCache(capacityBytes: 1 << 20, tag: { ETag.of($0) }, now: { clock.now })
        let loads = CallCounter()
        let load: @Sendable () async throws -> CachedBody = { Self.body("v\(loads.increment())") }
        #expect(try await cache.value(for: "k", policy: policy, load: load).freshness == .miss)
        clock.advance(9)
        let hit = try await cache.value(for: "k", policy: policy, load: load)
        #expect(hit.freshness == .hit)
        #expect(hit.age == 9)
        #expect(hit.remainingTTL == 1)
        clock.advance(2)
        let revalidating = try await cache.value(for: "k", policy: policy, load: load)
        #expect(revalidating.freshness == .revalidating)
        #expect(revalidating.value == Self.body("v1"))  // served at once, the old copy
        try await Task.sleep(for: .milliseconds(50))
        #expect(loads.count == 2)
        #expect(try await cache.value(for: "k", policy: policy, load: load).value == Self.body("v2"))
    }

    @Test func staleIfErrorThenTheErrorOnceTooOld() async throws {
        let clock = ManualClock()
        let cache = ResponseCache(capacityBytes: 1 << 20, tag: { ETag.of($0) }, now: { clock.now })
        _ = try await cache.value(for: "k", policy: policy) { Self.body("good") }
        clock.advance(50)
        let stale = try await cache.value(for: "k", policy: policy) { throw Down() }
        #expect(stale.freshness == .stale)
        #expect(stale.value == Self.body("good"))
        clock.advance(60)
        await #expect(throws: Down.self) { try await cache.value(for: "k", policy: policy) { throw Down() } }
    }

    @Test func concurrentMissesShareOneLoad() async throws {
        let cache = ResponseCache(capacityBytes: 1 << 20, tag: { ETag.of($0) })
        let loads = CallCounter()
        let policy = policy
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    _ = try await cache.value(for: "k", policy: policy) {
                        loads.increment()
                        try await Task.sleep(for: .milliseconds(100))
                        return Self.body("once")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(loads.count == 1)
    }

    @Test func evictsTheLeastRecentlyUsedToStayWithinItsBytes() async throws {
        let cache = ResponseCache(capacityBytes: 3 * (1000 + 256), tag: { ETag.of($0) })
        for key in ["a", "b", "c"] {
            _ = try await cache.value(for: key, policy: policy) { Self.body(key, size: 999) }
        }
        _ = try await cache.value(for: "a", policy: policy) { Self.body("a", size: 999) }  // a is now the newest
        _ = try await cache.value(for: "d", policy: policy) { Self.body("d", size: 999) }
        #expect(await cache.recency() == ["c", "a", "d"])
        #expect(await cache.usedBytes <= cache.capacityBytes)
        _ = try await cache.value(for: "huge", policy: policy) { Self.body("h", size: 10_000) }
        #expect(await cache.count == 3)  // larger than the whole cache: served, never stored
    }
}

@Suite struct UpstreamLimitsTests {
    let start = Date(timeIntervalSince1970: 5_000_000)

    @Test func theBucketAllowsItsBurstThenItsRate() {
        var bucket = TokenBucket(rate: 5, burst: 5, now: start)
        for _ in 0..<5 { #expect(bucket.take(now: start) == nil) }
        let wait = bucket.take(now: start) ?? 0
        #expect(abs(wait - 0.2) < 0.001)
        #expect(bucket.take(now: start.addingTimeInterval(0.2)) == nil)
    }

    @Test func theBreakerOpensHalfOpensAndCloses() {
        var breaker = CircuitBreaker(threshold: 3, cooldown: 30)
        for _ in 0..<2 { breaker.recordFailure(now: start) }
        #expect(breaker.admit(now: start) == nil)
        breaker.recordFailure(now: start)
        #expect(breaker.admit(now: start.addingTimeInterval(10)) == 20)
        #expect(breaker.admit(now: start.addingTimeInterval(30)) == nil)  // the trial call
        #expect(breaker.admit(now: start.addingTimeInterval(31)) != nil)  // only one at a time
        breaker.recordFailure(now: start.addingTimeInterval(31))
        #expect(breaker.admit(now: start.addingTimeInterval(40)) != nil)  // reopened
        #expect(breaker.admit(now: start.addingTimeInterval(61)) == nil)
        breaker.recordSuccess()
        #expect(breaker.admit(now: start.addingTimeInterval(62)) == nil)
        #expect(breaker.state == .closed)
    }

    @Test func theUserLimiterGivesEachUserTheirOwnBudget() throws {
        let limiter = UserRateLimiter(rate: 1, burst: 2, refusal: "slow down")
        let ana = UUID(), ben = UUID()
        try limiter.admit(ana, now: start)
        try limiter.admit(ana, now: start)
        #expect(throws: ServiceProblem.self) { try limiter.admit(ana, now: start) }
        try limiter.admit(ben, now: start)
        try limiter.admit(ana, now: start.addingTimeInterval(1))
    }

    static func settings(dailyQuota: Int?, breakerThreshold: Int = 5) -> UpstreamSettings {
        UpstreamSettings(
            baseURL: "https://example.invalid", apiKey: nil, requestsPerSecond: 100, burst: 100, dailyQuota: dailyQuota,
            attemptTimeout: .seconds(1), attempts: 1, breakerThreshold: breakerThreshold, breakerCooldown: 30,
            maximumBodyBytes: 1024)
    }

    /// Runs `body` with the daily quotas' ledger on a fresh database with the catalog schema.
    static func withLedger<Value: Sendable>(_ body: (DailyQuotaLedger, DatabasePool) async throws -> Value)
        async throws -> Value
    {
        try await withTestPool(migrators: [Migrator(schema: "catalog", migrations: CatalogMigrations.all)],
                               searchPath: "catalog") { pool, _ in
            try await body(DailyQuotaLedger(pool: pool), pool)
        }
    }

    static func used(_ pool: DatabasePool) async throws -> [Int] {
        try await pool.query("SELECT used FROM upstream_quota_days ORDER BY day").values(Int.self)
    }

    @Test func theGateEnforcesTheDailyQuota() async throws {
        try await Self.withLedger { ledger, pool in
            let gate = UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: 3), ledger: ledger, now: start)
            for _ in 0..<3 { try await gate.admit(now: start) }
            let midnight = UpstreamGate.nextDay(after: start)
            await #expect(throws: UpstreamFailure.rateLimited(retryAfter: midnight.timeIntervalSince(start))) {
                try await gate.admit(now: start)
            }
            try await gate.admit(now: midnight)  // a new UTC day
            #expect(try await Self.used(pool) == [3, 1])
        }
    }

    /// Replicas share one quota, and a restarted replica goes on from the day's count: N replicas must not spend N
    /// times the quota, nor a crash loop start it afresh.
    @Test func replicasShareTheDailyQuotaAndARestartKeepsTheCount() async throws {
        try await Self.withLedger { ledger, pool in
            let replicas = (0..<3).map { _ in
                UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: 7), ledger: ledger, now: start)
            }
            let admitted = CallCounter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        do throws(UpstreamFailure) {
                            try await replicas[index % 3].admit(now: start)
                            admitted.increment()
                        } catch .rateLimited {}
                    }
                }
                try await group.waitForAll()
            }
            #expect(admitted.count == 7)
            let restarted = UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: 7), ledger: ledger, now: start)
            await #expect(throws: UpstreamFailure.self) { try await restarted.admit(now: start) }
            #expect(try await Self.used(pool) == [7])
        }
    }

    /// A burst that finds the gate empty waits for one reservation rather than each reserving a block of its own.
    @Test func aBurstSharesOneReservationAtATime() async throws {
        try await Self.withLedger { ledger, pool in
            let gate = UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: 5_000), ledger: ledger, now: start)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { try await gate.admit(now: start) } }
                try await group.waitForAll()
            }
            #expect(try await Self.used(pool) == [20])  // two blocks of 10, not one each
        }
    }

    /// A request that waited across midnight still carries a time from the day before: the gate stays on the new day.
    @Test func aLateRequestFromYesterdayDoesNotTakeTheGateBack() async throws {
        try await Self.withLedger { ledger, pool in
            let gate = UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: 3), ledger: ledger, now: start)
            let midnight = UpstreamGate.nextDay(after: start)
            try await gate.admit(now: midnight)
            try await gate.admit(now: midnight.addingTimeInterval(-0.1))
            #expect(try await Self.used(pool) == [2])  // both from the new day's quota; no row for the day before
        }
    }

    /// Without its ledger no call goes out, and the client is told the database is unavailable.
    @Test func anUnreachableLedgerLetsNoCallOut() async throws {
        try await withTestPool { pool, _ in  // no catalog schema: the ledger's table is missing
            let gate = UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: 3),
                                    ledger: DailyQuotaLedger(pool: pool), now: start)
            let failure = await #expect(throws: UpstreamFailure.self) { try await gate.admit(now: start) }
            guard case .quotaLedgerUnavailable(let reason)? = failure else {
                Issue.record("expected quotaLedgerUnavailable, got \(String(describing: failure))")
                return
            }
            #expect(reason.contains("42P01"))  // undefined table, named by its SQLSTATE
            #expect(UpstreamFailure.quotaLedgerUnavailable(reason).problem.status == .serviceUnavailable)
        }
    }

    /// Calls are reserved a block at a time (a 500th of the quota), and the last ones one by one.
    @Test func theGateReservesItsQuotaInBlocks() async throws {
        try await Self.withLedger { ledger, pool in
            let settings = Self.settings(dailyQuota: 1_500)  // blocks of 3
            let first = UpstreamGate(upstream: "t", settings: settings, ledger: ledger, now: start)
            try await first.admit(now: start)
            try await first.admit(now: start)
            #expect(try await Self.used(pool) == [3])  // one block, two of its calls spent
            let second = UpstreamGate(upstream: "t", settings: settings, ledger: ledger, now: start)
            try await second.admit(now: start)
            #expect(try await Self.used(pool) == [6])
            try await pool.query("UPDATE upstream_quota_days SET used = 1499")
            let third = UpstreamGate(upstream: "t", settings: settings, ledger: ledger, now: start)
            try await third.admit(now: start)  // no block left, but one call
            #expect(try await Self.used(pool) == [1_500])
            await #expect(throws: UpstreamFailure.self) { try await third.admit(now: start) }
            try await first.admit(now: start)  // what a replica reserved stays its own
        }
    }

    @Test func aCallRefusedByAnotherLimitDoesNotTakeTheBreakersTrial() async throws {
        try await Self.withLedger { ledger, _ in
            let gate = UpstreamGate(upstream: "t", settings: Self.settings(dailyQuota: nil, breakerThreshold: 1),
                                    ledger: ledger, now: start)
            try await gate.admit(now: start)
            gate.recordFailure(now: start)  // open until start + 30
            gate.quotaExhausted(until: start.addingTimeInterval(31))
            await #expect(throws: UpstreamFailure.rateLimited(retryAfter: 1)) {
                try await gate.admit(now: start.addingTimeInterval(30))
            }
            try await gate.admit(now: start.addingTimeInterval(31))  // the trial is still there once the quota reopens
            await #expect(throws: UpstreamFailure.self) { try await gate.admit(now: start.addingTimeInterval(32)) }
        }
    }

    @Test func aSpikeArrest429PausesBrieflyAndAQuota429UntilTheReset() {
        let now = Date(timeIntervalSince1970: 1_469_900_000)
        let reset = "1469920563443"  // epoch milliseconds, about 5.7 hours later
        func body(_ code: String) -> Data { Data(#"{"fault":{"faultstring":"x","detail":{"errorcode":"\#(code)"}}}"#.utf8) }
        let quota = UpstreamClient.endOfRateLimit(
            resetHeader: reset, retryAfterHeader: nil, body: body("policies.ratelimit.QuotaViolation"), now: now)
        #expect(quota == Date(timeIntervalSince1970: 1_469_920_563.443))
        let spike = UpstreamClient.endOfRateLimit(
            resetHeader: reset, retryAfterHeader: nil, body: body("policies.ratelimit.SpikeArrestViolation"), now: now)
        #expect(spike == now.addingTimeInterval(1))
        #expect(UpstreamClient.endOfRateLimit(resetHeader: reset, retryAfterHeader: "7", body: Data("<html/>".utf8),
                                              now: now) == now.addingTimeInterval(7))
        // A reset already past is no reason to wait.
        #expect(UpstreamClient.endOfRateLimit(resetHeader: "1000", retryAfterHeader: nil,
                                              body: body("policies.ratelimit.QuotaViolation"), now: now)
                == now.addingTimeInterval(1))
    }

    @Test func upstreamURLsKeepTheHostAndEncodeEveryValue() {
        var settings = Self.settings(dailyQuota: nil)
        settings.baseURL = "https://app.ticketmaster.com/"
        settings.apiKey = "k&y"
        // No quota, so the ledger's pool is never used (nor connected).
        let unused = DailyQuotaLedger(pool: DatabasePool(connection: ConnectionConfiguration(
            connectionString: "host=/nonexistent", applicationName: "t")))
        settings.keyParameter = "apikey"
        let client = UpstreamClient(name: .ticketmaster, settings: settings,
                                    gate: UpstreamGate(upstream: "t", settings: settings, ledger: unused),
                                    callLedger: RollingCallLedger(pool: unused.pool), httpClient: .shared,
                                    metrics: CatalogMetrics(factory: NOOPMetricsHandler.instance))
        let search = TicketmasterSource().search(SearchQuery(text: "a&b=c/../@evil.com#x", sort: .relevance), at: PageCursor(pageSize: 5))
        guard case .fetch(let requests, _) = search, let request = requests.first else {
            Issue.record("a search fetches first")
            return
        }
        let url = client.url(for: request)
        #expect(!client.url(for: request, withKey: false).contains("apikey"))
        #expect(url.hasPrefix("https://app.ticketmaster.com/discovery/v2/events.json?city=a%26b%3Dc%2F..%2F%40evil.com%23x&"))
        #expect(url.hasSuffix("&apikey=k%26y"))
    }
}
