@testable import CatalogProxy
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import Postgres
@testable import ReplayUpstream
import TestSupport
import Testing

/// The best sellers served from the server's copy: the NYT's overview as the replay composes it, the schedule that
/// keeps the names, the overview and the other lists fresh, the lease that lets one replica keep it, and users'
/// picks that never call the NYT.
@Suite(.serialized) struct BestsellersRefreshTests {
    // MARK: The overview

    /// The replay's overview, in the documented shape: the 18 lists of the names file's latest date, each with the
    /// books its own current list has (all in the full overview, five in the overview).
    @Test func theReplaysOverviewCarriesEveryCurrentListWithItsBooks() throws {
        let nyt = try NYTBooksFixtures(root: Fixtures.root)
        let carried = try NYTBooks.listIDs(inOverview: nyt.overview.full)
        #expect(carried.count == 18)
        #expect(carried.contains("hardcover-fiction") && carried.contains("business-books"))
        #expect(!carried.contains("hardcover-graphic-books"))  // last published in 2017
        for list in carried {
            let fromOverview = try #require(try NYTBooks.books(inOverview: nyt.overview.full, category: list,
                                                               experience: .bestsellers))
            let own = try NYTBooks.books(nyt.currentList(list).1, category: list, experience: .bestsellers)
            #expect(fromOverview == own, "\(list)")
            let topFive = try #require(try NYTBooks.books(inOverview: nyt.overview.topFive, category: list,
                                                          experience: .bestsellers))
            #expect(topFive == Array(own.prefix(5)), "\(list)")
        }
        #expect(try NYTBooks.books(inOverview: nyt.overview.full, category: "hardcover-graphic-books",
                                   experience: .bestsellers) == nil)
        let body = try JSONSerialization.jsonObject(with: nyt.overview.full) as? [String: Any]
        let results = try #require(body?["results"] as? [String: Any])
        #expect(results["published_date"] as? String == "2023-04-02")
        #expect(Set(results.keys).isSuperset(of: ["bestsellers_date", "published_date", "published_date_description",
                                                  "previous_published_date", "next_published_date", "lists"]))
    }

    // MARK: The schedule

    @Test func theScheduleFetchesNamesThenTheOverviewThenTheOtherListsOldestFirst() {
        let plan = BestsellersRefreshPlan(overviewEvery: 3600)
        #expect(plan.next(namesAge: nil, overviewAge: nil, otherLists: []) == .names)
        #expect(plan.next(namesAge: 10, overviewAge: nil, otherLists: [("a", nil)]) == .overview)
        #expect(plan.next(namesAge: 10, overviewAge: 3600, otherLists: []) == .overview)
        let lists: [(id: String, age: TimeInterval?)] = [("old", 90_000), ("missing", nil), ("fresh", 60)]
        #expect(plan.next(namesAge: 10, overviewAge: 10, otherLists: lists) == .list("missing"))
        #expect(plan.next(namesAge: 10, overviewAge: 10, otherLists: [lists[0], lists[2]]) == .list("old"))
        #expect(plan.next(namesAge: 10, overviewAge: 10, otherLists: [lists[2]]) == nil)
        #expect(plan.next(namesAge: plan.namesEvery, overviewAge: 10, otherLists: []) == .names)
        // Kept for twice as long as they wait: the refresh is early, never late.
        #expect(plan.namesEvery * 2 == BestsellersSource.namesLife && plan.listsEvery * 2 == BestsellersSource.listLife)
        // Of the NYT's 5 calls a minute, the refresh takes 2.
        #expect(BestsellersRefreshPlan.callsPerMinute(ofUpstreamLimit: 5) == 2)
        #expect(BestsellersRefreshPlan.callsPerMinute(ofUpstreamLimit: 1) == 1)
    }

    // MARK: The lease

    @Test func oneReplicaHoldsTheLeaseUntilItLapsesOrIsGivenUp() async throws {
        try await withTestPool(migrators: [Migrator(schema: "catalog", migrations: CatalogMigrations.all)],
                               searchPath: "catalog") { pool, _ in
            let first = RefreshLease(pool: pool, name: "bestsellers", holder: UUID())
            let second = RefreshLease(pool: pool, name: "bestsellers", holder: UUID())
            #expect(try await first.hold(for: 30))
            #expect(try await !second.hold(for: 30))
            #expect(try await first.hold(for: 30))  // renewed
            try await pool.query("UPDATE refresh_leases SET held_until = now() - interval '1 second'")
            #expect(try await second.hold(for: 30))  // lapsed: taken over
            #expect(try await !first.hold(for: 30))
            await second.release(logger: Logger(label: "lease-tests"))
            #expect(try await first.hold(for: 30))
            #expect(try await RefreshLease(pool: pool, name: "other", holder: UUID()).hold(for: 30))
        }
    }

    // MARK: Through HTTP

    /// Two replicas with the scheduled refresh: one of them (the lease's holder) fetches the names and the overview
    /// once, and then a new user's picks of ten lists are served without any call to the NYT.
    @Test func aNewUsersPicksOfTenListsNeverCallTheNYT() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_BESTSELLERS_REFRESH_SECONDS": "3600"],
                                             secondReplica: true) { api in
            func calls(_ suffix: String) -> Int {
                api.replay.requestLog.filter { $0.path.hasSuffix(suffix) }.count
            }
            // The refresh has called for the overview, and kept its answer for every replica.
            let pool = DatabasePool(
                connection: ConnectionConfiguration(connectionString: api.databaseURL, applicationName: "refresh-tests",
                                                    searchPath: "catalog"),
                pool: PoolConfiguration(size: 1))
            try await pool.closing { pool in
                for _ in 0..<300 {
                    let kept = try await pool.query(
                        "SELECT count(*) FROM upstream_answers WHERE key LIKE '%/lists/full-overview.json'"
                    ).scalar(Int.self)
                    if kept > 0 { return }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(calls("/lists/names.json") == 1 && calls("/lists/full-overview.json") == 1)
            let before = api.replay.requestLog.count
            let carried = try NYTBooks.listIDs(inOverview: api.replay.fixtures.nytBooks.overview.full).sorted()
            let user = try await CatalogHarness.token()
            for (index, list) in carried.prefix(10).enumerated() {
                let page = try await api.get("/v1/catalog/bestsellers/items?category=\(list)", token: .some(user),
                                             on: index.isMultiple(of: 2) ? api.client : api.otherReplica)
                #expect(page.status == .ok, "\(list)")
                #expect(try page.decode(CatalogPage.self).items.allSatisfy { $0.book?.category == list })
            }
            // Whatever the refresh fetched meanwhile (lists the overview does not carry), the picks called nothing.
            let during = api.replay.requestLog.dropFirst(before).map(\.path)
            #expect(!during.contains { path in
                path.hasSuffix("names.json") || path.hasSuffix("overview.json")
                    || carried.prefix(10).contains { path.hasSuffix("/\($0).json") }
            })
            #expect(calls("/lists/names.json") == 1 && calls("/lists/full-overview.json") == 1)
        }
    }
}
