@testable import CatalogProxy
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import ReplayUpstream
import TestSupport
import Testing

/// catalog-proxy through real HTTP to the replay upstream: caching, coalescing, failures, and input that must never
/// reach an upstream.
// Serialized: each test runs several services and databases; side by side they would starve the machine.
@Suite(.serialized) struct CatalogHTTPTests {
    @Test func aCitySearchIsServedThenCachedAndRevalidatedByETag() async throws {
        try await CatalogHarness.withCatalog { api in
            let first = try await api.get("/v1/catalog/ticketmaster/items?q=San%20Francisco")
            #expect(first.status == .ok)
            #expect(first.headers[.xCache] == "miss")
            let page = try first.decode(CatalogPage.self)
            #expect(page.items.first?.id == "G5vYZfNi53_zo")
            #expect(page.items.allSatisfy { $0.experience == .ticketmaster })
            let etag = try #require(first.headers[.eTag])
            #expect(first.headers[.cacheControl] == "private, max-age=60")

            let second = try await api.get("/v1/catalog/ticketmaster/items?q=san%20francisco")
            #expect(second.headers[.xCache] == "hit")
            #expect(second.headers[.eTag] == etag)
            let notModified = try await api.get("/v1/catalog/ticketmaster/items?q=San%20Francisco",
                                                headers: [.ifNoneMatch: etag])
            #expect(notModified.status == .notModified)
            #expect(api.upstreamCalls == 1)
            // The key went upstream (redacted in the log), the caller's token did not.
            let call = try #require(api.replay.requestLog.first)
            #expect(call.query["apikey"] == "<redacted>")
            #expect(call.query["city"] == "San Francisco")
        }
    }

    /// `/metrics` after a cold and a warm search: the miss, the hit, and the one upstream call with its duration.
    @Test func metricsShowTheMissTheHitAndTheUpstreamCall() async throws {
        try await CatalogHarness.withCatalog { api in
            _ = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            _ = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            let text = String(buffer: try await api.get("/metrics", token: .some(nil)).body)
            func value(_ series: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
            }
            #expect(value(#"catalog_cache_lookups_total{experience="ticketmaster",route="search",result="miss"}"#) == 1)
            #expect(value(#"catalog_cache_lookups_total{experience="ticketmaster",route="search",result="hit"}"#) == 1)
            #expect(value(#"catalog_upstream_requests_total{upstream="ticketmaster",outcome="2xx"}"#) == 1)
            #expect(value(#"catalog_upstream_request_duration_seconds_count{upstream="ticketmaster"}"#) == 1)
            #expect(api.upstreamCalls == 1)
            // Ticketmaster's default 5,000 calls a day, less the one made (though a block of ten is reserved).
            #expect(value(#"catalog_upstream_quota_left_calls{upstream="ticketmaster"}"#) == 4999)
        }
    }

    @Test func detailsOfBothSourcesAreNormalized() async throws {
        try await CatalogHarness.withCatalog { api in
            let event = try await api.get("/v1/catalog/ticketmaster/items/G5diZfkn0B-bh").decode(CatalogItem.self)
            #expect(event.event?.priceRanges?.first?.min == 80)
            #expect(event.event?.ticketURL != nil)
            // One cell per experience: what a favorite keeps (`view=cell`) is the cell the list drew.
            let listed = try #require(try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
                .decode(CatalogPage.self).items.first { $0.event?.priceRanges != nil })
            let cell = try await api.get("/v1/catalog/ticketmaster/items/\(listed.id)?view=cell")
            #expect(try cell.decode(CatalogItem.self) == listed)
            let art = try await api.get("/v1/catalog/rijksmuseum/items/sk-c-5").decode(CatalogItem.self)
            #expect(art.id == "SK-C-5")
            #expect(art.artwork?.plaqueDescription?.hasPrefix("Rembrandt’s largest") == true)
            #expect(art.artwork?.dating == "1642")
            #expect(art.artwork?.productionPlaces == ["Amsterdam"])
            #expect(art.imageURL == "https://iiif.micr.io/PJEZO/full/max/0/default.jpg")
            let search = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=2").decode(CatalogPage.self)
            #expect(search.items.count == 2)
            #expect(!search.partial)
            let next = try #require(search.nextCursor)
            let second = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=2&cursor=\(next)")
                .decode(CatalogPage.self)
            #expect(!second.items.isEmpty)
            #expect(Set(second.items.map(\.id)).isDisjoint(with: search.items.map(\.id)))
        }
    }

    @Test func unknownItemsAre404s() async throws {
        try await CatalogHarness.withCatalog { api in
            for path in ["/v1/catalog/ticketmaster/items/unknown-id", "/v1/catalog/rijksmuseum/items/SK-X-999999"] {
                let response = try await api.get(path)
                #expect(response.status == .notFound, "\(path)")
                #expect(response.problem?.type == .notFound)
            }
            #expect(try await api.get("/v1/catalog/netflix/items?q=x").status == .notFound)
        }
    }

    @Test func concurrentIdenticalMissesMakeOneUpstreamRequest() async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(delayMs: 300, times: 1))
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<10 { group.addTask { try await api.get("/v1/catalog/ticketmaster/items?q=Chicago").status } }
                for try await status in group { #expect(status == .ok) }
            }
            #expect(api.upstreamCalls == 1)
            // Every request but the one that fetched either waited for that fetch or found its answer cached.
            let text = String(buffer: try await api.get("/metrics", token: .some(nil)).body)
            func value(_ series: String) -> Int {
                text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
                    .flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
            }
            let coalesced = value(#"catalog_coalesced_requests_total{experience="ticketmaster",route="search"}"#)
            let hits = value(#"catalog_cache_lookups_total{experience="ticketmaster",route="search",result="hit"}"#)
            #expect(coalesced >= 1 && coalesced + hits == 9)
        }
    }

    @Test func theLastGoodCopyIsServedWhenTheUpstreamFails() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_SEARCH_TTL_SECONDS": "1"]) { api in
            let good = try await api.get("/v1/catalog/ticketmaster/items?q=Denver")
            #expect(good.status == .ok)
            try await Task.sleep(for: .milliseconds(2100))  // past the TTL and the revalidation window
            api.replay.inject(.init(status: 500))
            let stale = try await api.get("/v1/catalog/ticketmaster/items?q=Denver")
            #expect(stale.status == .ok)
            #expect(stale.headers[.xCache] == "stale")
            #expect(stale.body == good.body)
            // Nothing cached for this search: the failure shows.
            let failed = try await api.get("/v1/catalog/ticketmaster/items?q=Houston")
            #expect(failed.status == .badGateway)
            #expect(failed.problem?.type == .upstreamBadResponse)
        }
    }

    /// An item seen in a search can be opened (and so favorited) while its upstream fails, on any replica: the last
    /// copy is in PostgreSQL, not only in the replica that fetched it. An item nobody has seen still fails.
    @Test func anItemSeenInASearchIsServedStaleWhileItsUpstreamFails() async throws {
        // Without the memory of "no such item" answers, so that the end shows the copy itself is forgotten.
        try await CatalogHarness.withCatalog(environment: ["CATALOG_NOT_FOUND_TTL_SECONDS": "0"],
                                             secondReplica: true) { api in
            let listed = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago&limit=5").decode(CatalogPage.self)
            let seen = try #require(listed.items.first)
            let other = try #require(api.otherReplica)
            api.replay.inject(.init(status: 500))
            for replica in [api.client, other] {
                let response = try await api.get("/v1/catalog/ticketmaster/items/\(seen.id)", on: replica)
                #expect(response.status == .ok)
                #expect(response.headers[.xCache] == "stale")
                #expect(try response.decode(CatalogItem.self) == seen)
            }
            let unseen = try await api.get("/v1/catalog/ticketmaster/items/vv17FZfdGkSrrMju", on: other)
            #expect(unseen.status == .badGateway)
            #expect(unseen.problem?.type == .upstreamBadResponse)

            // Once the upstream answers, the detail is fetched and served fresh, and its copy replaces the search's:
            // the replica that has never cached it falls back to that detail when the upstream fails again.
            api.replay.clearFaults()
            let fresh = try await api.get("/v1/catalog/ticketmaster/items/\(seen.id)", on: other)
            #expect(fresh.status == .ok)
            #expect(fresh.headers[.xCache] == "miss")
            api.replay.inject(.init(status: 500))
            let fallback = try await api.get("/v1/catalog/ticketmaster/items/\(seen.id)")
            #expect(fallback.headers[.xCache] == "stale")
            #expect(fallback.body == fresh.body)
            #expect(try fallback.decode(CatalogItem.self) != seen)  // a detail has facts a search result lacks

            // The upstream says the item is gone: it is forgotten, and no longer served when the upstream fails.
            api.replay.clearFaults()
            api.replay.inject(.init(pathPrefix: "/discovery/v2/events/\(seen.id)", status: 404, times: 1))
            #expect(try await api.get("/v1/catalog/ticketmaster/items/\(seen.id)").status == .notFound)
            api.replay.inject(.init(status: 500))
            #expect(try await api.get("/v1/catalog/ticketmaster/items/\(seen.id)").status == .badGateway)
        }
    }

    @Test func aSlowUpstreamIsA504() async throws {
        try await CatalogHarness.withCatalog(environment: ["UPSTREAM_TIMEOUT_MS": "200"]) { api in
            api.replay.inject(.init(delayMs: 1000))
            let response = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            #expect(response.status == .gatewayTimeout)
            #expect(response.problem?.type == .upstreamTimeout)
        }
    }

    @Test func aBodyThatTricklesIsCutOffByTheDeadline() async throws {
        try await CatalogHarness.withCatalog(environment: ["UPSTREAM_TIMEOUT_MS": "500"]) { api in
            api.replay.inject(.init(body: .trickle))
            // The body alone would take over a minute and keeps bytes flowing (no read timeout fires): only the
            // deadline on the whole attempt turns it into a 504.
            let response = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            #expect(response.status == .gatewayTimeout)
        }
    }

    @Test func anItemTheUpstreamNoLongerHasIsNotServedStale() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_DETAIL_TTL_SECONDS": "1"]) { api in
            #expect(try await api.get("/v1/catalog/ticketmaster/items/G5diZfkn0B-bh").status == .ok)
            try await Task.sleep(for: .milliseconds(2100))
            api.replay.inject(.init(status: 404))
            let gone = try await api.get("/v1/catalog/ticketmaster/items/G5diZfkn0B-bh")
            #expect(gone.status == .notFound)
        }
    }

    @Test func repeatedFailuresOpenTheBreakerAndStopCallingTheUpstream() async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(status: 503))
            for city in ["A", "B", "C", "D", "E"] {
                #expect(try await api.get("/v1/catalog/ticketmaster/items?q=\(city)").status == .badGateway)
            }
            let open = try await api.get("/v1/catalog/ticketmaster/items?q=F")
            #expect(open.status == .serviceUnavailable)
            #expect(open.problem?.type == .upstreamUnavailable)
            #expect(open.headers[.retryAfter] != nil)
            #expect(api.upstreamCalls == 5)
            // The other source has its own breaker.
            #expect(try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt").status == .badGateway)
        }
    }

    @Test func anUpstream429IsA503WithRetryAfterAndPausesCalls() async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(status: 429, times: 1))
            let limited = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            #expect(limited.status == .serviceUnavailable)
            #expect(limited.problem?.type == .upstreamRateLimited)
            #expect(limited.headers[.retryAfter] != nil)
        }
    }

    /// A search that is not UTF-8, carries NUL or a bidirectional override is the client's mistake, named; one
    /// typed with a decomposed accent is the same search as the composed one.
    @Test func aSearchMustBeTextAndIsSearchedInOneForm() async throws {
        try await CatalogHarness.withCatalog { api in
            for query in ["%FF", "Denver%00", "%E2%80%AEDenver", "Den%zzver"] {
                let refused = try await api.get("/v1/catalog/ticketmaster/items?q=\(query)")
                #expect(refused.status == .badRequest, "\(query)")
                #expect(refused.problem?.errors?.map(\.field) == ["q"], "\(query)")
            }
            #expect(api.upstreamCalls == 0)
            _ = try await api.get("/v1/catalog/ticketmaster/items?q=Caf%C3%A9")
            _ = try await api.get("/v1/catalog/ticketmaster/items?q=Cafe%CC%81")
            #expect(api.upstreamCalls == 1)  // one cache entry for both forms
            #expect(api.replay.requestLog.first?.query["city"] == "Caf\u{E9}")
        }
    }

    /// An upstream that says when to come back is left alone until then: the client is told the same, and nothing
    /// else is sent to it meanwhile.
    @Test func anUpstreamsRetryAfterIsHonouredForEveryone() async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(status: 429, retryAfter: 30, times: 1))
            let limited = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            #expect(limited.status == .serviceUnavailable)
            #expect((29...30).contains(Int(limited.headers[.retryAfter] ?? "") ?? 0))
            let other = try await CatalogHarness.token()
            let meanwhile = try await api.get("/v1/catalog/ticketmaster/items?q=Denver", token: .some(other))
            #expect(meanwhile.status == .serviceUnavailable)
            #expect(meanwhile.problem?.type == .upstreamRateLimited)
            #expect(api.upstreamCalls == 1)
        }
    }

    @Test(arguments: [ReplayUpstream.Fault.Body.malformed, .html, .truncated])
    func aBrokenBodyIsA502(_ body: ReplayUpstream.Fault.Body) async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(body: body))
            let response = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            #expect(response.status == .badGateway)
            #expect(response.problem?.type == .upstreamBadResponse)
        }
    }

    @Test(arguments: [301, 302, 307])
    func redirectsAreNeverFollowed(_ status: Int) async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(status: status))
            let response = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago")
            #expect(response.status == .badGateway)
            #expect(api.replay.requestLog.map(\.path) == ["/discovery/v2/events.json"])
        }
    }

    @Test func hostilePathsAndQueriesNeverReachAnUpstream() async throws {
        try await CatalogHarness.withCatalog { api in
            let paths = [
                "/v1/catalog/ticketmaster/items/..%2F..%2Fadmin", "/v1/catalog/ticketmaster/items/a%2Fb",
                "/v1/catalog/ticketmaster/items/https:%2F%2Fevil.example", "/v1/catalog/ticketmaster/items/x%0D%0AHost:evil",
                "/v1/catalog/rijksmuseum/items/SK-C-5%3Fkey%3Dmine", "/v1/catalog/rijksmuseum/items/..",
                "/v1/catalog/ticketmaster/items?q=", "/v1/catalog/ticketmaster/items?q=\(String(repeating: "x", count: 101))",
                "/v1/catalog/ticketmaster/items?q=x&cursor=not-a-cursor",
                "/v1/catalog/ticketmaster/items?q=x&limit=-1",
                "/v1/catalog/ticketmaster/items?q=x&cursor=\(PageCursor(pageSize: 50, page: 20).encoded)",
                // Page numbers whose offset overflows an Int: refused, not a crash.
                "/v1/catalog/ticketmaster/items?q=x&cursor=\(PageCursor(pageSize: 50, page: Int.max).encoded)",
                "/v1/catalog/rijksmuseum/items?q=x&cursor=\(PageCursor(pageSize: 50, page: 999_999_999_999_999_999).encoded)",
            ]
            for path in paths {
                let response = try await api.get(path)
                #expect((400..<500).contains(Int(response.status.code)), "\(path) → \(response.status)")
                #expect(response.headers[.contentType] == ProblemDetails.mediaType, "\(path)")
            }
            #expect(api.upstreamCalls == 0)
        }
    }

    @Test func searchAndDetailNeedASignedInUser() async throws {
        try await CatalogHarness.withCatalog { api in
            let anonymous = try await api.get("/v1/catalog/ticketmaster/items?q=Chicago", token: .some(nil))
            #expect(anonymous.status == .unauthorized)
            let experiences = try await api.get("/v1/catalog/experiences", token: .some(nil))
            #expect(experiences.status == .ok)
            let etag = try #require(experiences.headers[.eTag])
            let revalidated = try await api.get("/v1/catalog/experiences", token: .some(nil), headers: [.ifNoneMatch: etag])
            #expect(revalidated.status == .notModified)
            #expect(api.upstreamCalls == 0)
        }
    }

    @Test func oneUserCannotSpendEveryonesBudget() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_USER_RATE_PER_SECOND": "1"]) { api in
            // Twenty at once against a budget of 1/s with bursts of 4: most must be refused, however slow the machine.
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<20 { group.addTask { try await api.get("/v1/catalog/ticketmaster/items?q=Chicago").status } }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.contains(.tooManyRequests))
            let other = try await CatalogHarness.token()
            #expect(try await api.get("/v1/catalog/ticketmaster/items?q=Chicago", token: .some(other)).status == .ok)
        }
    }
}
