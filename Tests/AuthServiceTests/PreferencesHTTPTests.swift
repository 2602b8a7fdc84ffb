@testable import AuthService
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import TestSupport
import Testing

/// `PATCH /v1/auth/me` and the default category, against a stand-in catalog over real HTTP that lists each
/// experience's categories as catalog-proxy does (the events' segments, the NYT's lists; none for the museum).
@Suite struct PreferencesHTTPTests {
    static let categories: [String: [String]] = [
        "ticketmaster": ["music", "sports"], "bestsellers": ["hardcover-fiction", "young-adult"],
    ]

    static func withCatalogPeer(_ test: @escaping @Sendable (AuthClient) async throws -> Void) async throws {
        let router = Router()
        router.get("/v1/catalog/:experience/categories") { _, context -> Response in
            let experience = context.parameters.get("experience") ?? ""
            guard let ids = categories[experience] else { return Response(status: .notFound) }
            let list = CategoryList(categories: ids.map { CatalogCategory(id: $0, name: $0, updated: nil) })
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: .init(bytes: try JSONEncoder().encode(list))))
        }
        try await Application(router: router).test(.live) { catalog in
            try await AuthTestApp.withApp(environment: ["CATALOG_URL": "http://127.0.0.1:\(catalog.port!)"]) { api, _ in
                try await test(api)
            }
        }
    }

    static func preferences(_ response: TestResponse) throws -> [String: String] {
        try response.decode(UserProfile.self).preferences
    }

    @Test func theDefaultCategoryFollowsTheExperience() async throws {
        try await Self.withCatalogPeer { api in
            let token = try await api.signUp(experience: "ticketmaster").accessToken
            var response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(
                preferences: ["defaultCategory": "music", "theme": "dark"]))
            #expect(try Self.preferences(response) == ["defaultCategory": "music", "theme": "dark"])

            // Another experience's category is refused, with or without the move.
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: ProfileUpdate(preferences: ["defaultCategory": "hardcover-fiction"]))
            #expect(response.status == .badRequest)
            #expect(response.problem?.errors?.first?.field == "preferences.defaultCategory")
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(
                experience: "bestsellers", preferences: ["defaultCategory": "sports"]))
            #expect(response.status == .badRequest)
            var me = try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self)
            #expect(me.experience == .ticketmaster)  // nothing of a refused request was saved
            #expect(me.preferences["defaultCategory"] == "music")

            // Moving without naming one clears the old experience's category and keeps the rest.
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: ProfileUpdate(experience: "bestsellers"))
            #expect(response.status == .ok)
            #expect(try Self.preferences(response) == ["theme": "dark"])

            // Moving with one checks it against the new experience, and keeps it.
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(
                experience: "ticketmaster", preferences: ["defaultCategory": "sports"]))
            #expect(try Self.preferences(response) == ["defaultCategory": "sports", "theme": "dark"])
            // Naming the experience the account already has is no move.
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: ProfileUpdate(experience: "ticketmaster"))
            #expect(try Self.preferences(response)["defaultCategory"] == "sports")

            // An experience without categories takes none.
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(
                experience: "rijksmuseum", preferences: ["defaultCategory": "paintings"]))
            #expect(response.status == .badRequest)
            me = try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self)
            #expect(me.preferences["defaultCategory"] == "sports")
        }
    }

    /// The feed favorites-service polls to tell a user's other devices: each real change of a profile, with a version
    /// that counts up; a patch that changes nothing is not listed again.
    @Test func profileChangesAreListedForTheOtherServices() async throws {
        try await AuthTestApp.withApp { api, _ in
            let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) - 1)
            let token = try await api.signUp(experience: "mobiles").accessToken
            let user = try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self)
            func listed() async throws -> [ProfileChange] {
                let stamp = start.formatted(.iso8601).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                return try await api.feed("/v1/auth/profile-changes?since=\(stamp)").decode(ProfileChanges.self)
                    .changes.filter { $0.userId == user.id }
            }
            #expect(try await listed().isEmpty)  // signing up is no change
            _ = try await api.call(.patch, "/v1/auth/me", token: token,
                                   json: ProfileUpdate(experience: "bestsellers", displayName: "Ana"))
            var changes = try await listed()
            #expect(changes.map(\.version) == [1])
            #expect(changes.first?.experience == .bestsellers && changes.first?.displayName == "Ana")
            // The same values again: no change, no new version.
            _ = try await api.call(.patch, "/v1/auth/me", token: token,
                                   json: ProfileUpdate(experience: "bestsellers", displayName: "Ana"))
            #expect(try await listed().map(\.version) == [1])
            _ = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(preferences: ["theme": "dark"]))
            changes = try await listed()
            #expect(changes.map(\.version) == [2] && changes.first?.preferences == ["theme": "dark"])
            #expect(try await api.feed("/v1/auth/profile-changes?since=yesterday").status == .badRequest)
        }
    }

    /// The name the flash cards' title reads ("Ana's flash cards"): set, read back, changed with the rest, removed.
    @Test func aDisplayNameIsSetTidiedAndRemoved() async throws {
        try await AuthTestApp.withApp { api, _ in
            let token = try await api.signUp(experience: "flashcards").accessToken
            #expect(try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self).displayName == nil)
            var response = try await api.call(.patch, "/v1/auth/me", token: token,
                                              json: ProfileUpdate(displayName: "  Ana Mari\u{301}a \n"))
            #expect(response.status == .ok)
            let named = try response.decode(UserProfile.self)
            // Trimmed, and in NFC: "i" and its accent are stored as one scalar.
            #expect(named.displayName.map { Array($0.unicodeScalars) } == Array("Ana Mar\u{ED}a".unicodeScalars))
            #expect(try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self) == named)

            // Changed beside the experience: both kept.
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: ProfileUpdate(experience: "mobiles", displayName: "Ana 🦊"))
            let moved = try response.decode(UserProfile.self)
            #expect(moved.displayName == "Ana 🦊" && moved.experience == .mobiles)

            // Every field at fault is named; nothing of a refused request is saved.
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(
                experience: "holograms",
                displayName: String(repeating: "a", count: ProfileUpdate.maximumDisplayNameLength + 1)))
            #expect(response.status == .badRequest)
            #expect(response.problem?.errors?.map(\.field) == ["experience", "displayName"])
            for refused in ["Ana\nBen", "Ana\u{202E}neB"] {
                response = try await api.call(.patch, "/v1/auth/me", token: token,
                                              json: ProfileUpdate(displayName: refused))
                #expect(response.problem?.errors?.map(\.field) == ["displayName"], "\(refused)")
            }
            let kept = try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self)
            #expect(kept.displayName == "Ana 🦊")

            // An empty name removes it; a patch without one leaves it.
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(displayName: "  "))
            #expect(try response.decode(UserProfile.self).displayName == nil)
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(displayName: "Ben"))
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: ProfileUpdate(experience: "flashcards"))
            #expect(try response.decode(UserProfile.self).displayName == "Ben")
        }
    }
}
