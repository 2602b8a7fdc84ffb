@testable import CatalogProxy
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import Postgres
import ReplayUpstream
import TestSupport
import Testing

/// The upstreams' budgets as the upstreams count them (sliding windows, for every replica together), each user's share
/// of them, and the museum's resolver redirects: pure rules first, then against PostgreSQL, then over HTTP.
@Suite struct UpstreamBudgetRuleTests {
    let start = Date(timeIntervalSince1970: 1_000_000_000)

    func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }

    @Test func aSlidingWindowCountsEverySpanNotTheCalendarMinute() {
        let fivePerMinute = [RollingLimit(calls: 5, window: 60)]
        let calls = Array(repeating: at(59.9), count: 5)
        #expect(RollingLimit.wait(for: fivePerMinute, after: Array(calls.prefix(4)), now: at(60.1)) == nil)
        let wait = RollingLimit.wait(for: fivePerMinute, after: calls, now: at(60.1)) ?? 0
        #expect(abs(wait - 59.8) < 0.000_01)
        #expect(RollingLimit.wait(for: fivePerMinute, after: calls, now: at(119.8)) != nil)
        #expect(RollingLimit.wait(for: fivePerMinute, after: calls, now: at(119.9)) == nil)
        // The longest wait of several windows.
        let daily = RollingLimit(calls: 6, window: 86_400)
        let six = calls + [at(0)]
        let dayWait = RollingLimit.wait(for: [RollingLimit(calls: 5, window: 60), daily], after: six, now: at(200))
        #expect(abs((dayWait ?? 0) - 86_200) < 0.000_01)
    }

    @Test func aUsersShareIsAFractionOfEveryWindowAndNeverNothing() {
        let ticketmaster = UserShare(fraction: 0.2, rate: 5, burst: 5, rollingLimits: [], dailyQuota: 5000)
        #expect(ticketmaster.rate == 1)
        #expect(ticketmaster.burst == 2)  // a search and the detail tapped right after
        #expect(ticketmaster.rollingLimits == [RollingLimit(calls: 1000, window: 86_400)])
        let nyt = UserShare(fraction: 0.2, rate: 1, burst: 5,
                            rollingLimits: [RollingLimit(calls: 5, window: 60), RollingLimit(calls: 500, window: 86_400)],
                            dailyQuota: nil)
        #expect(nyt.rollingLimits == [RollingLimit(calls: 1, window: 60), RollingLimit(calls: 100, window: 86_400)])
        let tiny = UserShare(fraction: 0.01, rate: 1, burst: 1, rollingLimits: [], dailyQuota: 3)
        #expect(tiny.burst == 1)  // never more than the bucket holds
        #expect(tiny.rollingLimits == [RollingLimit(calls: 1, window: 86_400)])
    }

    @Test func redirectsAreFollowedOnlyBetweenTheMuseumsHosts() {
        let museum = UpstreamRedirect(allowing: ["https://data.rijksmuseum.nl", "https://id.rijksmuseum.nl/"])
        let record = "https://id.rijksmuseum.nl/200107928"
        #expect(museum.next(status: 200, location: nil, from: record, hops: 0) == nil)
        #expect(museum.next(status: 404, location: "https://evil.example/", from: record, hops: 0) == nil)
        #expect(museum.next(status: 303, location: "https://data.rijksmuseum.nl/200107928", from: record, hops: 0)
                == .follow("https://data.rijksmuseum.nl/200107928"))
        #expect(museum.next(status: 302, location: "/200107928?_profile=la", from: "https://data.rijksmuseum.nl/x",
                            hops: 1) == .follow("https://data.rijksmuseum.nl/200107928?_profile=la"))
        for (location, hops) in [("https://evil.example/200107928", 0), ("http://data.rijksmuseum.nl/1", 0),
                                 ("https://data.rijksmuseum.nl:8443/1", 0), ("https://data.rijksmuseum.nl/1", 3),
                                 ("http://169.254.169.254/latest/meta-data", 0)] {
            guard case .refuse = museum.next(status: 303, location: location, from: record, hops: hops) else {
                Issue.record("followed \(location) after \(hops) hops")
                continue
            }
        }
        guard case .refuse = museum.next(status: 303, location: nil, from: record, hops: 0) else {
            Issue.record("followed a redirect without a Location")
            return
        }
        let noRedirects = UpstreamRedirect(allowing: [])
        guard case .refuse = noRedirects.next(status: 301, location: record, from: record, hops: 0) else {
            Issue.record("an upstream without allowed origins followed a redirect")
            return
        }
    }

    /// One user's share of the per-second bucket runs out while the bucket still has calls for everyone else, and a
    /// refused call takes nothing from it.
    @Test func theGateRefusesAUserPastTheirShareAndLeavesTheRestForOthers() async throws {
        var settings = UpstreamLimitsTests.settings(dailyQuota: nil)
        settings.requestsPerSecond = 5
        settings.burst = 5
        settings.userShare = UserShare(fraction: 0.2, rate: 5, burst: 5, rollingLimits: [], dailyQuota: nil)
        let unused = DailyQuotaLedger(pool: DatabasePool(connection: ConnectionConfiguration(
            connectionString: "host=/nonexistent", applicationName: "t")))
        let gate = UpstreamGate(upstream: "t", settings: settings, ledger: unused, now: start)
        let (ana, ben) = (UUID(), UUID())
        for _ in 0..<2 { try await gate.admit(now: start, user: ana) }
        for _ in 0..<10 {
            await #expect(throws: UpstreamFailure.userShareSpent(retryAfter: 1)) {
                try await gate.admit(now: start, user: ana)
            }
        }
        try await gate.admit(now: start, user: ben)
        for _ in 0..<2 { try await gate.admit(now: start) }  // calls for no user (refreshes): the rest of the bucket
        await #expect(throws: UpstreamFailure.self) { try await gate.admit(now: start) }
        try await gate.admit(now: at(1), user: ana)  // a second later, Ana's share is back
    }
}

@Suite struct RollingCallLedgerTests {
    let start = Date(timeIntervalSince1970: 1_000_000_000)
    let nyt = RollingCallLedger.Budget(key: "nyt-books", limits: [RollingLimit(calls: 5, window: 60)], isUsers: false)

    func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }

    static func withLedger(_ body: (RollingCallLedger, DatabasePool) async throws -> Void) async throws {
        try await withTestPool(migrators: [Migrator(schema: "catalog", migrations: CatalogMigrations.all)],
                               searchPath: "catalog") { pool, _ in
            try await body(RollingCallLedger(pool: pool), pool)
        }
    }

    static func calls(_ pool: DatabasePool) async throws -> Int {
        try await pool.query("SELECT count(*)::int FROM upstream_calls").scalar(Int.self)
    }

    /// The clock is the test's: five calls at 59.9 s, then a burst at 60.1 s (a new calendar minute) sends nothing
    /// until 119.9 s, when the first of them leaves the window.
    @Test func fiveCallsAtTheEndOfAMinuteHoldTheNextMinutesBurstBack() async throws {
        try await Self.withLedger { ledger, pool in
            for _ in 0..<5 { try await ledger.reserve([nyt], now: at(59.9)) }
            for moment in [60.1, 60.1, 90, 119.8] {
                do throws(UpstreamFailure) {
                    try await ledger.reserve([nyt], now: at(moment))
                    Issue.record("a call went out at \(moment) s")
                } catch .rateLimited(let wait) {
                    #expect(abs(wait - (119.9 - moment)) < 0.000_01)
                }
            }
            #expect(try await Self.calls(pool) == 5)
            try await ledger.reserve([nyt], now: at(119.9))
            #expect(try await Self.calls(pool) == 6)
        }
    }

    /// Replicas reserving at the same moment (ledgers on separate sessions) are counted one after the other.
    @Test func replicasReservingAtOnceSendNoMoreThanTheWindowAllows() async throws {
        try await Self.withLedger { ledger, pool in
            let replicas = [ledger, RollingCallLedger(pool: pool), RollingCallLedger(pool: pool)]
            let admitted = CallCounter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<24 {
                    group.addTask {
                        do throws(UpstreamFailure) {
                            try await replicas[index % 3].reserve([nyt], now: at(30))
                            admitted.increment()
                        } catch .rateLimited {}
                    }
                }
                try await group.waitForAll()
            }
            #expect(admitted.count == 5)
            #expect(try await Self.calls(pool) == 5)
        }
    }

    /// A call refused by either budget is recorded in neither: a user past their share spends none of the NYT's
    /// minute, and the NYT's spent minute spends none of a user's share.
    @Test func aCallRefusedByOneBudgetIsCountedInNone() async throws {
        try await Self.withLedger { ledger, pool in
            let ana = RollingCallLedger.Budget(key: "nyt-books user ana", limits: [RollingLimit(calls: 1, window: 60)],
                                               isUsers: true)
            let ben = RollingCallLedger.Budget(key: "nyt-books user ben", limits: [RollingLimit(calls: 1, window: 60)],
                                               isUsers: true)
            try await ledger.reserve([nyt, ana], now: at(1))
            await #expect(throws: UpstreamFailure.userShareSpent(retryAfter: 60)) {
                try await ledger.reserve([nyt, ana], now: at(1))
            }
            #expect(try await Self.calls(pool) == 2)  // Ana's one call, in both budgets
            for _ in 0..<4 { try await ledger.reserve([nyt], now: at(2)) }
            await #expect(throws: UpstreamFailure.rateLimited(retryAfter: 59)) {
                try await ledger.reserve([nyt, ben], now: at(2))
            }
            try await ledger.reserve([ben], now: at(2))  // Ben's share was not spent by the refusal
        }
    }

    /// Production passes no time: the database's clock, the same for every replica.
    @Test func withoutATimeTheDatabasesClockCounts() async throws {
        try await Self.withLedger { ledger, pool in
            let one = RollingCallLedger.Budget(key: "u", limits: [RollingLimit(calls: 1, window: 3600)], isUsers: true)
            try await ledger.reserve([one])
            await #expect(throws: UpstreamFailure.self) { try await ledger.reserve([one]) }
            let recent = try await pool.query(
                "SELECT count(*)::int FROM upstream_calls WHERE called_at > now() - interval '1 minute'")
            #expect(try recent.scalar(Int.self) == 1)
        }
    }
}

/// Over HTTP, with the stack's defaults: what one user's burst does to that user and to everyone else.
@Suite(.serialized) struct FairShareHTTPTests {
    static func detailCalls(_ api: CatalogHarness) -> Int {
        api.replay.requestLog.filter { $0.path.hasPrefix("/discovery/v2/events/") }.count
    }

    /// Two replicas, every setting at its default: one user's burst of 80 ids nobody has seen gets that user 404s and
    /// 429s, never a 503, and another user's search in the middle of it is answered.
    @Test func oneUsersBurstOfUnknownIdsFailsNobodyElse() async throws {
        try await CatalogHarness.withCatalog(secondReplica: true, userShares: true) { api in
            let other = try #require(api.otherReplica)
            var statuses: [HTTPResponse.Status] = []
            var refusal: TestResponse?
            for number in 1...80 {
                let response = try await api.get("/v1/catalog/ticketmaster/items/vvG1UnknownEvent\(number)",
                                                  on: number.isMultiple(of: 2) ? api.client : other)
                statuses.append(response.status)
                if response.status == .tooManyRequests { refusal = response }
                if number == 40 {
                    let someoneElse = try await CatalogHarness.token()
                    let search = try await api.get("/v1/catalog/ticketmaster/items?q=Denver", token: .some(someoneElse),
                                                   on: other)
                    #expect(search.status == .ok)
                    #expect(try search.decode(CatalogPage.self).items.isEmpty == false)
                }
            }
            #expect(statuses.allSatisfy { [.notFound, .tooManyRequests].contains($0) })
            #expect(statuses.first == .notFound)
            #expect(statuses.contains(.tooManyRequests))
            #expect(refusal?.problem?.type == .rateLimited)
            #expect(Int(refusal?.headers[.retryAfter] ?? "") ?? 0 >= 1)
            // Only the ids answered 404 went upstream: a refusal costs the upstream nothing.
            #expect(Self.detailCalls(api) == statuses.filter { $0 == .notFound }.count)
        }
    }

    /// The museum's resolver as the museum runs it: a record's id host answers 303 with the record on the data host
    /// (another host); search and detail go through it, and each record GET is two hops.
    @Test func recordsLoadThroughTheResolversRedirectToAnotherHost() async throws {
        try await CatalogHarness.withCatalog(environment: [
            "RIJKSMUSEUM_RECORDS_URL": "http://localhost:\(CatalogHarness.replayPort)/id",
        ], museumDataHost: "127.0.0.1") { api in
            let page = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=2")
            #expect(page.status == .ok)
            #expect(try page.decode(CatalogPage.self).items.count == 2)
            let detail = try await api.get("/v1/catalog/rijksmuseum/items/SK-C-5")
            #expect(detail.status == .ok)
            #expect(try detail.decode(CatalogItem.self).title.contains("Night Watch"))
            let paths = api.replay.requestLog.map(\.path)
            #expect(paths.contains("/id/200107928"))
            #expect(paths.contains("/200107928"))
            #expect(paths.filter { $0.hasPrefix("/id/") }.count == paths.filter { $0.dropFirst().allSatisfy(\.isNumber) }.count)
            #expect(!paths.contains("/__replay/redirected"))
        }
    }

    /// A redirect the proxy does not follow (the resolver's answer to a request without JSON-LD sends it to the
    /// website; here the records host is told to redirect to a host outside the museum's two) is the upstream's
    /// bad answer, not a call somewhere else.
    @Test func aRedirectElsewhereIsRefusedAndNotFollowed() async throws {
        try await CatalogHarness.withCatalog(environment: [
            "RIJKSMUSEUM_SEARCH_URL": "http://localhost:\(CatalogHarness.replayPort)",
            "RIJKSMUSEUM_RECORDS_URL": "http://localhost:\(CatalogHarness.replayPort)/id",
        ], museumDataHost: "127.0.0.1") { api in
            let detail = try await api.get("/v1/catalog/rijksmuseum/items/SK-C-5")
            #expect(detail.status == .badGateway)
            #expect(detail.problem?.type == .upstreamBadResponse)
            #expect(!api.replay.requestLog.map(\.path).contains("/200107928"))
        }
    }
}
