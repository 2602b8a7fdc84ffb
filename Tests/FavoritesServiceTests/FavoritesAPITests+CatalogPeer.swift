import Contracts
import Foundation
@testable import FavoritesService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ReplayUpstream
import ServiceKit
import TestSupport
import Testing

/// What the favorites API does when its catalog peer fails, refuses the caller or is down: nothing is written that
/// the catalog did not confirm, and the caller gets the catalog's reason.
extension FavoritesAPITests {
    /// The heart works while Ticketmaster fails, for what the user has seen in a list: catalog-proxy answers the
    /// lookup with the last copy it saw. What nobody has seen cannot be confirmed, and nothing is written for it.
    @Test func anItemSeenInAListCanBeFavoritedWhileItsUpstreamFails() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let listed = try await api.catalog.execute(
                uri: "/v1/catalog/ticketmaster/items?q=Chicago&limit=5", method: .get,
                headers: [.authorization: "Bearer \(ana.token)"]) { try $0.decode(CatalogPage.self) }
            let seen = try #require(listed.items.first)
            api.upstreams.inject(.init(status: 503))
            let added = try await api.call(.put, "/v1/favorites/ticketmaster/\(seen.id)", as: ana)
            #expect(added.status == .created)
            #expect(try added.decode(Favorite.self).item.title == seen.title)
            let unseen = try await api.call(.put, "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju", as: ana)
            #expect(unseen.status == .serviceUnavailable)
            #expect(unseen.problem?.type == .catalogUnavailable)
            #expect(try await api.eventCount(of: ana) == 1)
        }
    }

    /// Services learn of ended sessions on their own schedule: when catalog-proxy already refuses a token that
    /// favorites-service still accepts, the answer is the token's 401, not a catalog outage. A token that expired in
    /// between stays `token-expired`, so the client refreshes rather than signing the user out.
    @Test(arguments: [(nil, ProblemType.invalidToken), ("invalid-token", .invalidToken), ("token-expired", .tokenExpired)])
    func aTokenTheCatalogRefusesIsA401(catalogSays: String?, answered: ProblemType) async throws {
        let refusingCatalog = Router()
        refusingCatalog.get("/v1/catalog/{experience}/items/{id}") { _, _ in
            let problem = catalogSays.map {
                #"{"type":"\#($0)","title":"Unauthorized","status":401,"detail":"no","requestId":"r"}"#
            }
            return Response(status: .unauthorized, headers: [.contentType: ProblemDetails.mediaType],
                            body: .init(byteBuffer: ByteBuffer(string: problem ?? "")))
        }
        try await Application(router: refusingCatalog).test(.live) { catalog in
            try await FavoritesHarness.run(catalogURL: "http://127.0.0.1:\(catalog.port!)") { api in
                let ana = try await api.user()
                let response = try await api.call(.put, Self.nightWatch, as: ana)
                #expect(response.status == .unauthorized)
                #expect(response.problem?.type == answered)
                #expect(response.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#)
                #expect(try await api.eventCount(of: ana) == 0)
            }
        }
    }

    /// The item lookup carries the caller's request id, so one id finds the request in both services' logs. (The
    /// stand-in catalog answers with what it received as the item's title.)
    @Test func theCatalogLookupCarriesTheRequestId() async throws {
        let echoingCatalog = Router()
        echoingCatalog.get("/v1/catalog/{experience}/items/{id}") { request, _ in
            let item = CatalogItem(id: "SK-C-5", experience: .rijksmuseum, title: request.headers[.requestID] ?? "-")
            return try ServiceJSON.encoder.encode(item).jsonResponse()
        }
        try await Application(router: echoingCatalog).test(.live) { catalog in
            try await FavoritesHarness.run(catalogURL: "http://127.0.0.1:\(catalog.port!)") { api in
                let ana = try await api.user()
                let response = try await api.call(.put, Self.nightWatch, as: ana, headers: [.requestID: "tap-trace-1"])
                #expect(response.status == .created)
                #expect(try response.decode(Favorite.self).item.title == "tap-trace-1")
            }
        }
    }

    @Test func whenTheCatalogIsDownNothingIsWritten() async throws {
        try await FavoritesHarness.run(catalogURL: "http://127.0.0.1:1") { api in
            let ana = try await api.user()
            let response = try await api.call(.put, Self.nightWatch, as: ana)
            #expect(response.status == .serviceUnavailable)
            #expect(response.problem?.type == .catalogUnavailable)
            #expect(response.headers[.retryAfter] != nil)
            #expect(try await api.eventCount(of: ana) == 0)
        }
    }
}
