import Contracts
import Foundation
import NIOHTTP1
import Testing

extension FaultInjection {
    /// Every catalog-proxy replica stopped: favorites-service stays in the gateway and serves what does not need the
    /// catalog (lists, ids, unfavorites), its readiness reporting the peer down; a new favorite, which the catalog
    /// must confirm, is refused cleanly and saves nothing. The catalog comes back and favoriting works again.
    @Suite struct PeerOutageTests {
        @Test func theCatalogDownLeavesFavoritesReadyAndServing() async throws {
            let stack = try StackUnderTest.required()
            let (client, _) = try await FaultInjection.signedInClient(stack, experience: .mobiles, label: "peer-outage")
            #expect(try await client.send(.PUT, "/v1/favorites/mobiles/1").status == .created)

            let catalogReplicas = try await stack.replicas().filter { $0.hasPrefix("catalog-proxy-") }
            try #require(!catalogReplicas.isEmpty)
            for replica in catalogReplicas { try await stack.stop(replica, with: SIGTERM) }
            do {
                try await Self.checkServingWithoutTheCatalog(stack, client)
            } catch {
                _ = try? await stack.stack("up")  // the scenarios after this one need the catalog back
                throw error
            }
            try await stack.stack("up")
            #expect(try await client.send(.PUT, Self.unseenItem).status == .created)
            for replica in stack.favoritesReplicas {
                #expect(try await StackClient(replica).get("/health/ready").decode(ReadinessReport.self).status == .ready)
            }
            FaultInjection.report("peer outage", "\(catalogReplicas.count) catalog-proxy replicas stopped; favorites-service stayed ready (degraded), served lists and unfavorites, refused new favorites with 503 catalog-unavailable")
        }

        /// A recorded event no other test or fuzzed request favorites: an item looked up within the last
        /// `FAVORITES_SNAPSHOT_TTL_SECONDS` is favorited without the catalog (``RecentItems``), by design.
        static let unseenItem = "/v1/favorites/ticketmaster/G5dIZ4mCEr3K4"

        static func checkServingWithoutTheCatalog(_ stack: StackUnderTest, _ client: StackClient) async throws {
            for replica in stack.favoritesReplicas {
                let ready = try await StackClient(replica).get("/health/ready")
                #expect(ready.status == .ok, "\(replica)")
                let report = try ready.decode(ReadinessReport.self)
                #expect(report.status == .degraded && report.checks["database"] == "ok")
                #expect(report.checks["catalog"] != "ok")
            }
            // Through the gateway: the lists, the ids and an unfavorite do not need the catalog.
            #expect(try await client.get("/v1/favorites?experience=mobiles").decode(FavoritePage.self).items
                .map(\.item.id) == ["1"])
            #expect(try await client.get("/v1/favorites/ids?experience=mobiles").status == .ok)
            let refused = try await client.send(.PUT, Self.unseenItem)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.problem?.type == .catalogUnavailable)
            #expect(try await client.send(.DELETE, "/v1/favorites/mobiles/1").status == .noContent)
            #expect(try await client.get("/v1/favorites/ids?experience=mobiles").decode(FavoriteIDs.self).itemIds.isEmpty)
        }
    }
}
