import Contracts
import EventStore
import Foundation
@testable import FavoritesService
import HTTPTypes
import HummingbirdTesting
import Postgres
import ServiceKit
import TestSupport
import Testing

/// The views built from the log: "most favorited" kept by the async projection, and rebuilds and repairs that must
/// reproduce what the live writers produced.
@Suite(.serialized) struct ProjectionAPITests {
    static let nightWatch = "SK-C-5"
    static let ngItem = "NG-MC-807"

    static func popular(_ api: FavoritesHarness, as user: FavoritesHarness.User, experience: String = "rijksmuseum")
        async throws -> [String: Int]
    {
        let response = try await api.call(.get, "/v1/favorites/popular?experience=\(experience)", as: user)
        #expect(response.status == .ok)
        let items = try response.decode(PopularItems.self).items
        #expect(items.map(\.favoriteCount) == items.map(\.favoriteCount).sorted(by: >), "most favorited first")
        return Dictionary(uniqueKeysWithValues: items.map { ($0.itemId, $0.favoriteCount) })
    }

    @Test func popularCountsEveryUsersFavoritesAndForgetsErasedAccounts() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let ben = try await api.user()
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ana)
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.ngItem)", as: ana)
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben)
            // Already a favorite: without a key no event; with one, a favorite-confirmed event that counts nothing.
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben)
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben,
                                   headers: [.idempotencyKey: "again"])
            #expect(try await api.eventTypes(of: ben).last == FavoriteEvent.confirmedType)
            let counted = [Self.nightWatch: 2, Self.ngItem: 1]
            #expect(try await eventually({ try await Self.popular(api, as: ben) }) { $0 == counted } == counted)
            #expect(try await Self.popular(api, as: ben, experience: "ticketmaster").isEmpty)
            // Settled, the list is revalidated by a digest of its body (the projection writes nothing meanwhile).
            let path = "/v1/favorites/popular?experience=rijksmuseum"
            let etag = try #require(try await api.call(.get, path, as: ben).headers[.eTag])
            #expect(try await api.call(.get, path, as: ben, headers: [.ifNoneMatch: etag]).status == .notModified)

            _ = try await api.call(.delete, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben)
            let afterRemoval = [Self.nightWatch: 1, Self.ngItem: 1]
            #expect(try await eventually({ try await Self.popular(api, as: ben) }) { $0 == afterRemoval }
                == afterRemoval)
            let recounted = try await api.call(.get, path, as: ben, headers: [.ifNoneMatch: etag])
            #expect(recounted.status == .ok)
            #expect(recounted.headers[.eTag] != etag)

            api.authority.deletedAccounts.add(ana.id)
            #expect(try await eventually({ try await Self.popular(api, as: ben) }) { $0.isEmpty }.isEmpty)

            #expect(try await api.call(.get, "/v1/favorites/popular", as: ben).status == .badRequest)
            #expect(try await api.call(.get, "/v1/favorites/popular?experience=rijksmuseum&limit=0", as: ben).status
                == .badRequest)
            let lag = try await api.withPool { try await ProjectionBatch.lag(of: "popular", pool: $0) }
            #expect(lag.events == 0)
        }
    }

    /// Every row of the views, as JSON text, in a fixed order.
    static func views(_ pool: DatabasePool) async throws -> [String: [String]] {
        [
            "favorites": try await pool.query("""
                SELECT row_to_json(f)::text FROM favorites f ORDER BY user_id, experience, item_id
                """).values(String.self),
            "popular_items": try await pool.query("""
                SELECT row_to_json(p)::text FROM popular_items p ORDER BY experience, item_id
                """).values(String.self),
            "popular_members": try await pool.query("""
                SELECT row_to_json(m)::text FROM popular_members m ORDER BY user_id, experience, item_id
                """).values(String.self),
        ]
    }

    @Test func rebuiltAndRepairedViewsEqualTheLiveOnes() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let ben = try await api.user()
            let cleo = try await api.user()
            for id in ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "vvG18Z4m501KZN"] {
                _ = try await api.call(.put, "/v1/favorites/ticketmaster/\(id)", as: ana)
                _ = try await api.call(.put, "/v1/favorites/ticketmaster/\(id)", as: ben)
            }
            _ = try await api.call(.delete, "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju", as: ana)
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben,
                                   headers: [.idempotencyKey: "k1"])
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben,
                                   headers: [.idempotencyKey: "k1"])
            // A keyed favorite of a favorite: a favorite-confirmed event, which rebuilds and repairs must skip.
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ben,
                                   headers: [.idempotencyKey: "k2"])
            _ = try await api.call(.delete, "/v1/favorites?experience=ticketmaster", as: ben)
            _ = try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.ngItem)", as: cleo)
            api.authority.deletedAccounts.add(cleo.id)
            _ = try await eventually({ try await api.eventTypes(of: cleo) }) { $0 == ["stream-erased"] }

            try await api.withPool { pool in
                _ = try await eventually({ try await ProjectionBatch.lag(of: "popular", pool: pool).events }) {
                    $0 == 0
                }
                let live = try await Self.views(pool)
                let indexes: SQL = """
                    SELECT indexname FROM pg_indexes
                     WHERE schemaname = 'favorites' AND tablename IN ('favorites', 'popular_items', 'popular_members')
                     ORDER BY indexname
                    """
                let liveIndexes = try await pool.query(indexes).values(String.self)
                #expect(liveIndexes.contains("favorites_pkey"))
                #expect(live["favorites"]?.count == 3)  // ana: 2 events left; ben: the Night Watch
                #expect(live["popular_items"]?.count == 3)

                let reader = testConfigReader(databaseURL: api.database.connectionString, environment: [
                    "AUTH_URL": "http://127.0.0.1:1", "CATALOG_URL": "http://127.0.0.1:1",
                ])
                let favorites = try await FavoritesService.rebuild(view: .favorites, user: nil, reader: reader)
                #expect(favorites.contains("favorites view"))
                #expect(try await Self.views(pool) == live)
                let popular = try await FavoritesService.rebuild(view: .popular, user: nil, reader: reader)
                #expect(popular.contains("popular view"))
                #expect(try await Self.views(pool) == live)
                #expect(try await pool.query(indexes).values(String.self) == liveIndexes, "names kept")

                // A rebuild while writes keep coming: every write succeeds, and what the live writers and the
                // switched-in tables then hold is what a rebuild from the log gives.
                let writes = Task {
                    var statuses: [HTTPResponse.Status] = []
                    for round in 0..<12 {
                        let method: HTTPRequest.Method = round.isMultiple(of: 2) ? .put : .delete
                        statuses.append(try await api.call(method, "/v1/favorites/ticketmaster/vv1k8Z4E0YG7MA0I",
                                                           as: ben).status)
                    }
                    return statuses
                }
                _ = try await FavoritesService.rebuild(view: .favorites, user: nil, reader: reader)
                let statuses = try await writes.value
                #expect(statuses.allSatisfy { (200..<300).contains($0.code) }, "\(statuses)")
                let afterWrites = try await Self.views(pool)["favorites"]
                _ = try await FavoritesService.rebuild(view: .favorites, user: nil, reader: reader)
                #expect(try await Self.views(pool)["favorites"] == afterWrites)
                #expect(afterWrites == live["favorites"], "twelve toggles end where they began")

                // A damaged user view is repaired from that user's stream alone.
                try await pool.query("DELETE FROM favorites WHERE user_id = \(ana.id)")
                #expect(try await FavoritesView.repair(user: ana.id, pool: pool) == 4)
                try await pool.query("DELETE FROM favorites WHERE user_id = \(ben.id)")  // a stream with a confirmed event
                _ = try await FavoritesView.repair(user: ben.id, pool: pool)
                // (Only the favorites view: the popular projection may still be applying ben's toggles.)
                #expect(try await Self.views(pool)["favorites"] == live["favorites"])
            }

            // The swapped-in tables are the live ones now: writes and the projector carry on.
            #expect(try await api.call(.put, "/v1/favorites/rijksmuseum/\(Self.nightWatch)", as: ana).status == .created)
            let popular = try await eventually({ try await Self.popular(api, as: ana) }) {
                $0[Self.nightWatch] == 2
            }
            #expect(popular[Self.nightWatch] == 2)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana)
                .decode(FavoriteIDs.self).itemIds == [Self.nightWatch])
        }
    }
}
