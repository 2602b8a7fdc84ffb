@testable import CatalogProxy
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import ReplayUpstream
import TestSupport
import Testing

/// The Rijksmuseum's fan-out (a search, then three or four record GETs per object) through real HTTP to the replay
/// of the museum's data services: what a cold and a warm page cost, coalescing, partial pages, and per-user budgets.
@Suite(.serialized) struct RijksmuseumFanOutTests {
    static func recordCalls(_ api: CatalogHarness) -> [String] {
        api.replay.requestLog.map(\.path).filter { $0.hasPrefix("/id/") }
    }

    static func searchCalls(_ api: CatalogHarness) -> Int {
        api.replay.requestLog.filter { $0.path == "/search/collection" }.count
    }

    @Test func aWarmSearchCostsOneCallAndAWarmDetailNone() async throws {
        try await CatalogHarness.withCatalog(secondReplica: true) { api in
            let cold = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4").decode(CatalogPage.self)
            #expect(cold.items.contains { $0.id == "SK-C-5" && $0.imageURL?.contains("iiif.micr.io") == true })
            #expect(!cold.partial)
            #expect(Self.searchCalls(api) == 1)
            // Each object: its record, its VisualItem, its DigitalObject; all with the JSON-LD Accept header.
            #expect(Self.recordCalls(api).count == 3 * cold.items.count)
            #expect(api.replay.requestLog.filter { $0.path.hasPrefix("/id/") }
                .allSatisfy { $0.accept == "application/ld+json" })

            // Another replica (a cache of its own, the same database): the objects are known, so a search naming the
            // same maker differently costs its one page of ids, and the detail nothing.
            let other = try #require(api.otherReplica)
            api.replay.clearLog()
            let warm = try await api.get("/v1/catalog/rijksmuseum/items?q=Rembrandt%20van%20Rijn&limit=4", on: other)
                .decode(CatalogPage.self)
            #expect(warm.items.map(\.id) == cold.items.map(\.id))
            #expect(api.upstreamCalls == 1)
            #expect(Self.searchCalls(api) == 1)
            let detail = try await api.get("/v1/catalog/rijksmuseum/items/SK-C-5", on: other)
            #expect(detail.status == .ok)
            #expect(try detail.decode(CatalogItem.self).artwork?.plaqueDescription?.isEmpty == false)
            // The first search's page of ids is kept for every replica too: asked again elsewhere, it costs nothing.
            _ = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=3", on: other)
            #expect(api.upstreamCalls == 1)
        }
    }

    @Test func twentyIdenticalConcurrentColdSearchesMakeOneFanOut() async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(pathPrefix: "/search/collection", delayMs: 300, times: 1))
            let pages = try await withThrowingTaskGroup(of: CatalogPage.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4").decode(CatalogPage.self)
                    }
                }
                return try await group.reduce(into: [CatalogPage]()) { $0.append($1) }
            }
            #expect(Set(pages.map { $0.items.map(\.id) }).count == 1)
            #expect(Self.searchCalls(api) == 1)
            let records = Self.recordCalls(api)
            #expect(records.count == 3 * pages[0].items.count)
            #expect(Set(records).count == records.count)  // no record fetched twice
        }
    }

    @Test func aPageWhoseRecordsFailOrStallIsServedPartialAndNotKept() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_PAGE_DEADLINE_MS": "3000"]) { api in
            let whole = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4").decode(CatalogPage.self)
            let ids = whole.items.map(\.id)
            #expect(ids.count == 4)
            try await CatalogHarness.withCatalog(environment: ["CATALOG_PAGE_DEADLINE_MS": "3000"]) { fresh in
                // The Night Watch's record fails; another object's VisualItem stalls past the page's deadline.
                fresh.replay.inject(.init(pathPrefix: "/id/200107928", status: 500))
                fresh.replay.inject(.init(pathPrefix: "/id/92", delayMs: 8000, times: 1))
                let response = try await fresh.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4")
                #expect(response.status == .ok)
                let partial = try response.decode(CatalogPage.self)
                #expect(partial.partial)
                #expect(!partial.items.isEmpty)
                #expect(partial.items.count <= 2)
                #expect(!partial.items.contains { $0.id == "SK-C-5" })
                #expect(partial.nextCursor == whole.nextCursor)  // paging goes on past what is missing

                // Not kept: once the upstream answers (and the stalled record has come in), the page comes whole.
                fresh.replay.clearFaults()
                let again = try await eventually {
                    try await fresh.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4").decode(CatalogPage.self)
                } until: { !$0.partial }
                #expect(!again.partial)
                #expect(again.items.map(\.id) == ids)
            }
        }
    }

    @Test func aPageNoneOfWhoseRecordsResolveIsTheUpstreamsFailure() async throws {
        try await CatalogHarness.withCatalog { api in
            api.replay.inject(.init(pathPrefix: "/id/", status: 500))
            let response = try await api.get("/v1/catalog/rijksmuseum/items?q=rembrandt&limit=4")
            #expect(response.status == .badGateway)
            #expect(response.problem?.type == .upstreamBadResponse)
        }
    }
}
