import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import Testing

extension FaultInjection {
    /// The catalog's upstream (the replay server, on Ticketmaster's paths) failing in every way it can while users
    /// search: error statuses, rate limiting, broken bodies, a body that trickles, no answer in time. catalog-proxy
    /// must stay up, serve its last good copy of what it has seen (`X-Cache: stale`), and answer anything else with a
    /// problem within its time budget; once the upstream heals, it serves fresh data again by itself.
    @Suite struct UpstreamFaultTests {
        /// The body of the replay server's `POST /__replay/faults` (see Tools/ReplayUpstream).
        struct ReplayFault: Codable, Sendable {
            var pathPrefix = "/discovery/"
            var delayMs: Int?
            var status: Int?
            var body: String?
        }

        static let faults: [(String, ReplayFault)] = [
            ("500", ReplayFault(status: 500)),
            ("503", ReplayFault(status: 503)),
            ("429", ReplayFault(status: 429)),
            ("malformed JSON", ReplayFault(body: "malformed")),
            ("HTML page", ReplayFault(body: "html")),
            ("connection dropped mid-body", ReplayFault(body: "truncated")),
            ("trickling body", ReplayFault(body: "trickle")),
            ("no answer in time", ReplayFault(delayMs: 5000)),
        ]

        @Test func catalogServesStaleOrFailsFastWhenItsUpstreamFails() async throws {
            let stack = try StackUnderTest.required()
            try #require(!stack.catalogReplicas.isEmpty && !stack.replayURL.isEmpty && stack.catalogTimeBudget > .zero,
                         "needs E2E_CATALOG_REPLICAS, E2E_REPLAY_URL and E2E_CATALOG_TIME_BUDGET_MS")
            let (app, _) = try await FaultInjection.signedInClient(stack, experience: .ticketmaster, label: "upstream")
            let replay = StackClient(stack.replayURL)
            _ = try await replay.send(.DELETE, "/__replay/faults")
            // What the app has already seen, in every replica's cache: a search and an item.
            let search = "/v1/catalog/ticketmaster/items?q=Chicago&limit=5"
            let firstItem = try await app.get(search).decode(CatalogPage.self).items.first
            let detail = "/v1/catalog/ticketmaster/items/\(try #require(firstItem).id)"
            for replica in stack.catalogReplicas {
                let direct = StackClient(replica, token: app.token)
                for path in [search, detail] { #expect(try await direct.get(path).status == .ok) }
            }
            // Past their freshness and their revalidation window (twice the TTLs the stack sets): only a working
            // upstream could refresh them now.
            try await Task.sleep(for: .seconds(3))

            // Overrunning the budget by seconds would mean a deadline is not enforced; a busy machine may add less.
            let budget = stack.catalogTimeBudget + .seconds(2)
            var problems: [String] = []
            var slowest = Duration.zero
            var staleServed = 0
            var recovered = true
            for (index, (name, fault)) in Self.faults.enumerated() {
                let injected = try await replay.send(.POST, "/__replay/faults", json: fault)
                try #require(injected.status == .created)
                // Several users at once: the seen pages, a new search, and the liveness of the gateway route.
                let outcomes = try await withThrowingTaskGroup(of: (String, StackResponse, Duration).self) { group in
                    // Two rounds of four: eight requests, within the client's eight connections to the gateway, so the
                    // time measured is the stack's and not a wait for a connection here.
                    for round in 0..<2 {
                        for path in [search, detail, Self.unseenSearch(index * 3 + round),
                                     "/v1/catalog/health/live"] {
                            group.addTask {
                                let started = ContinuousClock.now
                                let response = try await app.get(path)
                                return (path, response, ContinuousClock.now - started)
                            }
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for (path, response, elapsed) in outcomes {
                    slowest = max(slowest, elapsed)
                    if elapsed > budget { problems.append("\(name): \(path) took \(elapsed.inSeconds)") }
                    if path == search || path == detail {
                        if response.status == .ok, response.headers.first(name: "X-Cache") == "stale" {
                            staleServed += 1
                        } else {
                            problems.append("\(name): \(path) → \(response.status.code) X-Cache \(response.headers.first(name: "X-Cache") ?? "-")")
                        }
                    } else if path.hasSuffix("/health/live") {
                        if response.status != .ok { problems.append("\(name): catalog not live: \(response.status.code)") }
                    } else if !(500..<600).contains(response.status.code) || !response.isProblem {
                        problems.append("\(name): new search → \(response.status.code), problem: \(response.isProblem)")
                    }
                }
                _ = try await replay.send(.DELETE, "/__replay/faults")
                // Each kind of failure meets closed circuit breakers, not the ones the previous kind opened.
                recovered = try await Self.healed(stack, token: app.token) && recovered
            }
            // The stale copies are replaced by fresh ones once the upstream answers again.
            let refreshed = try await eventually({ try await app.get(search).headers.first(name: "X-Cache") ?? "" }) {
                $0 != "stale"
            }
            FaultInjection.report("upstream faults", """
                \(Self.faults.count) kinds of upstream failure (\(Self.faults.map(\.0).joined(separator: ", "))); \
                \(staleServed) answers served from the stale copy; slowest answer \(slowest.inSeconds) \
                (budget \(stack.catalogTimeBudget.inSeconds)); catalog live throughout: \
                \(!problems.contains { $0.contains("not live") }); recovered by itself after each: \(recovered)
                """)
            #expect(problems.isEmpty, "\(problems.prefix(8))")
            #expect(recovered, "a replica kept failing new searches after the upstream healed")
            #expect(refreshed != "stale")
        }

        /// A search no replica has cached: the seen one with another page size. It has results (a body that
        /// trickles takes seconds), unlike a search for an unknown city.
        static func unseenSearch(_ number: Int) -> String {
            "/v1/catalog/ticketmaster/items?q=Chicago&limit=\(6 + number)"
        }

        /// Whether every catalog-proxy replica answers a new search again (its breaker closed after a trial call).
        static func healed(_ stack: StackUnderTest, token: String?) async throws -> Bool {
            var healed = true
            for replica in stack.catalogReplicas {
                let direct = StackClient(replica, token: token)
                let status = try await eventually({
                    try await direct.get("/v1/catalog/ticketmaster/items?q=healed-\(UUID().uuidString.prefix(6))").status
                }) { $0 == .ok }
                healed = healed && status == .ok
            }
            return healed
        }
    }
}
