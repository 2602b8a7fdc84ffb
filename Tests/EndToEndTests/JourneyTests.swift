import Contracts
import Foundation
import NIOHTTP1
import Logging
import Postgres
import TestSupport
import Testing

extension EndToEnd {
    /// The whole FavoriteMe journey through the gateway of a running stack (two replicas of each service, one
    /// PostgreSQL), once per experience, as the app makes it.
    @Suite struct JourneyTests {
        /// A search with results in the recorded fixtures the stack's replay upstream serves.
        static let searches: [ExperienceID: String] = [.ticketmaster: "San%20Francisco", .rijksmuseum: "rembrandt"]

        @Test(arguments: [ExperienceID.ticketmaster, .rijksmuseum])
        func wholeJourney(experience: ExperienceID) async throws {
            let stack = try StackUnderTest.required()
            try #require(stack.favoritesReplicas.count >= 2, "E2E_FAVORITES_REPLICAS needs two replicas")
            let other: ExperienceID = experience == .ticketmaster ? .rijksmuseum : .ticketmaster
            let email = uniqueEmail(experience.rawValue)
            let anonymous = StackClient(stack.gateway)

            // Sign up choosing the experience.
            let signUp = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: email, password: accountPassword, experience: experience.rawValue, deviceName: "e2e"))
            #expect(signUp.status == .created)
            let session = try signUp.decode(AuthSession.self)
            #expect(session.user.experience == experience)
            let app = anonymous.with(token: session.accessToken)

            // Search, and fill the hearts: nothing is a favorite yet.
            let search = try await app.get("/v1/catalog/\(experience)/items?q=\(Self.searches[experience]!)")
            #expect(search.status == .ok)
            let item = try #require(try search.decode(CatalogPage.self).items.first, "the search found nothing")
            let hearts = try await app.get("/v1/favorites/ids?experience=\(experience)").decode(FavoriteIDs.self)
            #expect(hearts.itemIds.isEmpty)

            // Favorite on one replica; the other serves it at once, in the ids and in the list.
            let itemPath = "/v1/favorites/\(experience)/\(item.id)"
            let writer = StackClient(stack.favoritesReplicas[0], token: session.accessToken)
            let reader = StackClient(stack.favoritesReplicas[1], token: session.accessToken)
            let key = UUID().uuidString
            let added = try await writer.send(.PUT, itemPath, headers: [("Idempotency-Key", key)])
            #expect(added.status == .created)
            let favorite = try added.decode(Favorite.self)
            #expect(favorite.item.title == item.title)
            #expect(try await reader.get("/v1/favorites/ids?experience=\(experience)").decode(FavoriteIDs.self).itemIds
                == [item.id])
            #expect(try await reader.get("/v1/favorites?experience=\(experience)").decode(FavoritePage.self).items
                .map(\.item.id) == [item.id])
            // The same request retried on the other replica is the same answer, and no second event.
            let retried = try await reader.send(.PUT, itemPath, headers: [("Idempotency-Key", key)])
            #expect(retried.status == .created)
            #expect(try retried.decode(Favorite.self) == favorite)

            // Detail of the item.
            let detail = try await app.get("/v1/catalog/\(experience)/items/\(item.id)")
            #expect(detail.status == .ok)
            #expect(try detail.decode(CatalogItem.self).id == item.id)

            // The favorites tab, then the same page again with its ETag.
            let tab = try await app.get("/v1/favorites?experience=\(experience)")
            #expect(try tab.decode(FavoritePage.self).items == [favorite])
            let etag = try #require(tab.headers.first(name: "ETag"))
            #expect(try await app.get("/v1/favorites?experience=\(experience)", headers: [("If-None-Match", etag)])
                .status == .notModified)

            // Unfavorite (twice: still 204), and the heart is empty again.
            #expect(try await app.send(.DELETE, itemPath).status == .noContent)
            #expect(try await app.send(.DELETE, itemPath).status == .noContent)
            #expect(try await app.get("/v1/favorites/ids?experience=\(experience)").decode(FavoriteIDs.self).itemIds
                .isEmpty)

            // Favorite it again, then change experience: the other catalog's favorites are separate.
            #expect(try await app.send(.PUT, itemPath).status == .created)
            let changed = try await app.send(.PATCH, "/v1/auth/me", json: ProfileUpdate(experience: other.rawValue))
            #expect(changed.status == .ok)
            #expect(try changed.decode(UserProfile.self).experience == other)
            #expect(try await app.get("/v1/favorites/ids?experience=\(other)").decode(FavoriteIDs.self).itemIds.isEmpty)
            #expect(try await app.get("/v1/favorites/ids?experience=\(experience)").decode(FavoriteIDs.self).itemIds
                == [item.id])

            // Clear the first experience's favorites: one request, all gone.
            #expect(try await app.send(.DELETE, "/v1/favorites?experience=\(experience)").status == .noContent)
            #expect(try await app.get("/v1/favorites?experience=\(experience)").decode(FavoritePage.self).items.isEmpty)

            // Log out: the access token stops working everywhere (the other services learn it within their poll
            // interval), and so does the refresh token.
            #expect(try await app.send(.POST, "/v1/auth/logout").status == .noContent)
            let refused: [HTTPResponseStatus] = [.unauthorized, .unauthorized]
            let afterLogout = try await eventually({
                [try await app.get("/v1/favorites/ids?experience=\(experience)").status,
                 try await app.get("/v1/catalog/\(experience)/items/\(item.id)").status]
            }) { $0 == refused }
            #expect(afterLogout == refused, "favorites-service and catalog-proxy still accept the logged-out token")
            #expect(try await app.get("/v1/auth/me").problem?.type == .invalidToken)
            let retired = RefreshRequest(refreshToken: session.refreshToken)
            #expect(try await anonymous.send(.POST, "/v1/auth/refresh", json: retired).status == .unauthorized)

            // Sign in again, then "relaunch": the stored refresh token alone keeps the user signed in.
            let signIn = try await anonymous.send(.POST, "/v1/auth/login", json: SignInRequest(
                email: email, password: accountPassword, deviceName: "e2e"))
            #expect(signIn.status == .ok)
            let stored = RefreshRequest(refreshToken: try signIn.decode(AuthSession.self).refreshToken)
            let relaunch = try await anonymous.send(.POST, "/v1/auth/refresh", json: stored)
            #expect(relaunch.status == .ok)
            let relaunched = anonymous.with(token: try relaunch.decode(AuthSession.self).accessToken)
            let profile = try await relaunched.get("/v1/auth/me").decode(UserProfile.self)
            #expect(profile.email == email)
            #expect(profile.experience == other)

            // Something to erase, then delete the account: its favorites go from the log and the view.
            #expect(try await relaunched.send(.PUT, "/v1/favorites/\(experience)/\(item.id)").status == .created)
            #expect(try await relaunched.send(.DELETE, "/v1/auth/me", json: AccountDeletion(password: accountPassword))
                .status == .noContent)
            let left = try await eventually({ try await Self.storedFavorites(of: profile.id, in: stack) }) {
                $0 == (viewRows: 0, events: ["stream-erased"])
            }
            #expect(left == (viewRows: 0, events: ["stream-erased"]), "the deleted account's favorites remain")
            // Its sessions ended with it: the other services refuse its token once they have polled the revocations.
            let afterDeletion = try await eventually({
                try await relaunched.get("/v1/favorites/ids?experience=\(experience)").status
            }) { $0 == .unauthorized }
            #expect(afterDeletion == .unauthorized, "favorites-service still accepts the deleted account's token")
            let again = try await anonymous.send(.POST, "/v1/auth/login", json: SignInRequest(
                email: email, password: accountPassword))
            #expect(again.problem?.type == .invalidCredentials)
        }

        /// What favorites-service's tables hold for a user: rows of the view, and the types of the stream's events.
        static func storedFavorites(of user: UUID, in stack: StackUnderTest) async throws
            -> (viewRows: Int, events: [String])
        {
            try await stack.withFavoritesDatabase { pool in
                let rows = try await pool.query("SELECT count(*) FROM favorites.favorites WHERE user_id = \(user)")
                    .values(Int.self).first ?? -1
                let stream = "user-" + user.uuidString.lowercased()
                let events = try await pool.query(
                    "SELECT event_type FROM favorites.events WHERE stream_id = \(stream) ORDER BY version"
                ).values(String.self)
                return (rows, events)
            }
        }
    }
}
