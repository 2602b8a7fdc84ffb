import Contracts
import Foundation
@testable import FavoritesService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Postgres
import ReplayUpstream
import ServiceKit
import TestSupport
import Testing

/// The favorites API end to end with its real peers: catalog lookups over HTTP, the event log and the inline view.
// Serialized: each test runs several services and databases; side by side they would starve the machine.
@Suite(.serialized) struct FavoritesAPITests {
    static let nightWatch = "/v1/favorites/rijksmuseum/SK-C-5"
    static let event = "/v1/favorites/ticketmaster/G5diZfkn0B-bh"
    @Test func favoritingStoresASnapshotOnceAndIsReadBackAtOnce() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let first = try await api.call(.put, Self.nightWatch, as: ana)
            #expect(first.status == .created)
            let favorite = try first.decode(Favorite.self)
            #expect(favorite.item.id == "SK-C-5" && favorite.item.experience == .rijksmuseum)
            #expect(favorite.item.title.contains("Night Watch") || favorite.item.title.contains("Nachtwacht"))
            #expect(favorite.item.imageURL?.hasPrefix("https://") == true)
            #expect(favorite.version == 1)
            #expect(try await api.call(.put, Self.nightWatch, as: ana).status == .ok)
            #expect(try await api.eventCount(of: ana) == 1)

            let page = try await api.call(.get, "/v1/favorites?experience=rijksmuseum", as: ana)
            #expect(page.status == .ok)
            let list = try page.decode(FavoritePage.self)
            #expect(list.items == [favorite])
            #expect(list.version == 1)
            let etag = try #require(page.headers[.eTag])
            #expect(try await api.call(.get, "/v1/favorites?experience=rijksmuseum", as: ana,
                                       headers: [.ifNoneMatch: etag]).status == .notModified)
            let ids = try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana)
                .decode(FavoriteIDs.self)
            #expect(ids.itemIds == ["SK-C-5"])
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
                .decode(FavoriteIDs.self).itemIds.isEmpty)
        }
    }

    @Test func unfavoriteAndClearAreIdempotentAndNoOpsWriteNothing() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let first = try await api.call(.put, Self.event, as: ana)
            _ = try await api.call(.put, "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju", as: ana)
            #expect(try await api.call(.delete, Self.event, as: ana).status == .noContent)
            #expect(try await api.call(.delete, Self.event, as: ana).status == .noContent)
            #expect(try await api.eventCount(of: ana) == 3)  // added, added, removed: the second delete wrote nothing
            #expect(try await api.call(.delete, "/v1/favorites?experience=ticketmaster", as: ana).status == .noContent)
            #expect(try await api.call(.delete, "/v1/favorites?experience=ticketmaster", as: ana).status == .noContent)
            #expect(try await api.eventCount(of: ana) == 4)  // one clear event
            let ids = try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
                .decode(FavoriteIDs.self)
            #expect(ids.itemIds.isEmpty)
            #expect(ids.version == 4)

            let changes = try await api.call(.get, "/v1/favorites/changes?since=1", as: ana).decode(FavoriteChanges.self)
            #expect(changes.changes.map(\.kind) == [.added, .removed, .cleared])
            #expect(changes.changes.map(\.version) == [2, 3, 4])
            #expect(changes.version == 4)
            // An added change carries the favorite as the list showed it; the others carry none.
            #expect(changes.changes.map { $0.favorite == nil } == [false, true, true])
            let shown = try await api.call(.get, "/v1/favorites/changes?since=0", as: ana).decode(FavoriteChanges.self)
            #expect(try shown.changes.first?.favorite == first.decode(Favorite.self))

            // The changes are revalidated by a digest of their body: 304 while it is the same, 200 once it is not.
            let before = try #require(try await api.call(.get, "/v1/favorites/changes?since=1", as: ana).headers[.eTag])
            let unchanged = try await api.call(.get, "/v1/favorites/changes?since=1", as: ana,
                                               headers: [.ifNoneMatch: before])
            #expect(unchanged.status == .notModified)
            _ = try await api.call(.put, Self.event, as: ana)
            let after = try await api.call(.get, "/v1/favorites/changes?since=1", as: ana, headers: [.ifNoneMatch: before])
            #expect(after.status == .ok)
            #expect(try after.decode(FavoriteChanges.self).version == 5)

            // At the end of the log: nothing new. Past it (another account's position, a restored device): refused,
            // never "nothing new", which would let the device skip every change to come.
            let current = try await api.call(.get, "/v1/favorites/changes?since=5", as: ana).decode(FavoriteChanges.self)
            #expect(current.changes.isEmpty && current.version == 5)
            let ahead = try await api.call(.get, "/v1/favorites/changes?since=999", as: ana)
            #expect(ahead.status == .conflict)
            #expect(ahead.problem?.type == .syncPositionAhead)
            #expect(ahead.problem?.detail.contains("version 5") == true)
            let stranger = try await api.user()
            #expect(try await api.call(.get, "/v1/favorites/changes?since=1", as: stranger).problem?.type
                == .syncPositionAhead)
        }
    }

    /// A retried `PUT` answers as its first request did: the same status and favorite (the API's dates are whole
    /// seconds; the stored microseconds are checked in FavoriteEventTests).
    static func expectFirstAnswer(_ retry: TestResponse, of first: TestResponse) throws {
        #expect(retry.status == first.status)
        let original = try first.decode(Favorite.self)
        let replayed = try retry.decode(Favorite.self)
        #expect(replayed.item == original.item && replayed.version == original.version)
        #expect(abs(replayed.favoritedAt.timeIntervalSince(original.favoritedAt)) < 0.000_01)
    }

    /// An event's favorite keeps when the event is, at the venue, as the recorded Ticketmaster detail gives it: the
    /// Favorites tab draws its cell without the catalog. An artwork has no such time.
    @Test func anEventFavoriteKeepsWhenTheEventIs() async throws {
        let recorded = try Data(contentsOf: FavoritesHarness.fixtures
            .appending(path: "ticketmaster/tmdocs-v2-event-detail-G5diZfkn0B-bh.json"))
        struct Detail: Decodable {
            struct Start: Decodable { var localDate: String; var localTime: String }
            struct Dates: Decodable { var start: Start }
            var dates: Dates
        }
        let start = try JSONDecoder().decode(Detail.self, from: recorded).dates.start
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let key: HTTPFields = [.idempotencyKey: "when-1"]
            let added = try await api.call(.put, Self.event, as: ana, headers: key).decode(Favorite.self)
            #expect(added.item.event?.localDate == start.localDate)
            #expect(added.item.event?.localTime == start.localTime)
            let listed = try await api.call(.get, "/v1/favorites?experience=ticketmaster", as: ana)
                .decode(FavoritePage.self).items
            #expect(listed.map(\.item.event?.localDate) == [start.localDate])
            #expect(listed.map(\.item.event?.localTime) == [start.localTime])
            // A retry is answered from the event, which carries them too.
            let retried = try await api.call(.put, Self.event, as: ana, headers: key).decode(Favorite.self)
            #expect(retried == added)

            let artwork = try await api.call(.put, Self.nightWatch, as: ana).decode(Favorite.self)
            #expect(artwork.item.event == nil)
        }
    }

    /// A user keeps at most `FAVORITES_MAX_PER_EXPERIENCE` favorites per experience: past it a new one is 409 and
    /// writes nothing; favoriting one already kept, another experience, or after an unfavorite still works.
    @Test func favoritesPerExperienceAreBounded() async throws {
        try await FavoritesHarness.run(environment: ["FAVORITES_MAX_PER_EXPERIENCE": "2"]) { api in
            let ana = try await api.user()
            let kept = ["/v1/favorites/ticketmaster/G5diZfkn0B-bh", "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju"]
            for path in kept { #expect(try await api.call(.put, path, as: ana).status == .created) }
            let third = "/v1/favorites/ticketmaster/vvG18Z4m501KZN"
            let refused = try await api.call(.put, third, as: ana)
            #expect(refused.status == .conflict)
            #expect(refused.problem?.type == .favoritesLimitReached)
            #expect(try await api.eventCount(of: ana) == 2)
            #expect(try await api.call(.put, kept[0], as: ana).status == .ok)
            #expect(try await api.call(.put, Self.nightWatch, as: ana).status == .created)
            #expect(try await api.call(.delete, kept[1], as: ana).status == .noContent)
            #expect(try await api.call(.put, third, as: ana).status == .created)
        }
    }

    @Test func anIdSpelledOtherwiseThanTheCatalogsIsRefusedWithTheRightSpelling() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let response = try await api.call(.put, "/v1/favorites/rijksmuseum/sk-c-5", as: ana)
            #expect(response.status == .badRequest)
            #expect(response.problem?.errors?.map(\.field) == ["itemId"])
            #expect(response.problem?.errors?.first?.message.contains("SK-C-5") == true)
            #expect(try await api.eventCount(of: ana) == 0)
        }
    }

    @Test func concurrentFavoritesOfOneUserAllLandInOrder() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let ids = ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "vvG18Z4m501KZN", "vv1k8Z4E0YG7MA0I", "1Ae7ZfdGkSp307Y"]
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for id in ids { group.addTask { try await api.call(.put, "/v1/favorites/ticketmaster/\(id)", as: ana).status } }
                for try await status in group { #expect(status == .created) }
            }
            let changes = try await api.call(.get, "/v1/favorites/changes?since=0", as: ana).decode(FavoriteChanges.self)
            #expect(changes.changes.map(\.version) == [1, 2, 3, 4, 5])
            #expect(Set(changes.changes.compactMap(\.itemId)) == Set(ids))
        }
    }

    @Test func sortsAndPagesFromTheView() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            for id in ["vvG18Z4m501KZN", "G5diZfkn0B-bh", "vv1k8Z4E0YG7MA0I"] {
                _ = try await api.call(.put, "/v1/favorites/ticketmaster/\(id)", as: ana)
            }
            let recent = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=recent", as: ana)
                .decode(FavoritePage.self)
            #expect(recent.items.map(\.item.id) == ["vv1k8Z4E0YG7MA0I", "G5diZfkn0B-bh", "vvG18Z4m501KZN"])
            // The events app's own order, and its default: soonest first.
            let soonest = try await api.call(.get, "/v1/favorites?experience=ticketmaster", as: ana)
                .decode(FavoritePage.self).items
            let whens = soonest.map { "\($0.item.event?.localDate ?? "~")T\($0.item.event?.localTime ?? "")" }
            #expect(soonest.count == 3 && whens == whens.sorted())
            #expect(Set(soonest.map(\.item.id)) == Set(recent.items.map(\.item.id)))
            let oldest = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=oldest&limit=2", as: ana)
                .decode(FavoritePage.self)
            #expect(oldest.items.map(\.item.id) == ["vvG18Z4m501KZN", "G5diZfkn0B-bh"])
            let cursor = try #require(oldest.nextCursor)
            let rest = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=oldest&limit=2&cursor=\(cursor)",
                                          as: ana).decode(FavoritePage.self)
            #expect(rest.items.map(\.item.id) == ["vv1k8Z4E0YG7MA0I"])
            #expect(rest.nextCursor == nil)
            let titles = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=title", as: ana)
                .decode(FavoritePage.self).items.map(\.item.title)
            #expect(titles == titles.sorted { $0.lowercased() < $1.lowercased() })
            let priced = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=price", as: ana)
                .decode(FavoritePage.self).items
            let prices = priced.map(\.sortPrice)
            let known = prices.compactMap { $0 }
            #expect(!known.isEmpty)
            #expect(known == known.sorted())
            #expect(prices.prefix(known.count).allSatisfy { $0 != nil })  // events without prices come last
            #expect(try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=random", as: ana).status
                    == .badRequest)
            // A cursor belongs to its sort.
            #expect(try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=title&cursor=\(cursor)",
                                       as: ana).status == .badRequest)
            // Price pages cross from priced to unpriced items without losing or repeating one.
            var pagedByPrice: [String] = []
            var next: String? = ""
            while let page = next {
                let suffix = page.isEmpty ? "" : "&cursor=\(page)"
                let body = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=price&limit=1\(suffix)",
                                              as: ana).decode(FavoritePage.self)
                pagedByPrice += body.items.map(\.item.id)
                next = body.nextCursor
            }
            #expect(pagedByPrice == priced.map(\.item.id))
        }
    }

    /// Pages start after the last item served: what changes in between shifts nothing.
    @Test func aChangeBetweenPagesNeitherSkipsNorRepeatsAnItem() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            for id in ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "vvG18Z4m501KZN", "vv1k8Z4E0YG7MA0I"] {
                _ = try await api.call(.put, "/v1/favorites/ticketmaster/\(id)", as: ana)
            }
            let first = try await api.call(.get, "/v1/favorites?experience=ticketmaster&sort=recent&limit=2", as: ana)
                .decode(FavoritePage.self)
            #expect(first.items.map(\.item.id) == ["vv1k8Z4E0YG7MA0I", "vvG18Z4m501KZN"])
            // Meanwhile, on another device: one item of the first page goes, a new favorite arrives.
            _ = try await api.call(.delete, "/v1/favorites/ticketmaster/vvG18Z4m501KZN", as: ana)
            _ = try await api.call(.put, "/v1/favorites/ticketmaster/1Ae7ZfdGkSp307Y", as: ana)
            let cursor = try #require(first.nextCursor)
            let second = try await api.call(.get,
                                            "/v1/favorites?experience=ticketmaster&sort=recent&limit=2&cursor=\(cursor)",
                                            as: ana).decode(FavoritePage.self)
            #expect(second.items.map(\.item.id) == ["vv17FZfdGkSrrMju", "G5diZfkn0B-bh"])
            #expect(second.nextCursor == nil)

            let ids = try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
            let etag = try #require(ids.headers[.eTag])
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana,
                                       headers: [.ifNoneMatch: "W/\(etag)"]).status == .notModified)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana,
                                       headers: [.ifNoneMatch: etag]).status == .ok)
        }
    }

    @Test func oneUserNeverSeesOrChangesAnothersFavorites() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let ben = try await api.user()
            _ = try await api.call(.put, Self.nightWatch, as: ana)
            #expect(try await api.call(.get, "/v1/favorites?experience=rijksmuseum", as: ben)
                .decode(FavoritePage.self).items.isEmpty)
            #expect(try await api.call(.delete, Self.nightWatch, as: ben).status == .noContent)
            #expect(try await api.call(.delete, "/v1/favorites?experience=rijksmuseum", as: ben).status == .noContent)
            #expect(try await api.call(.get, "/v1/favorites/changes?since=0", as: ben)
                .decode(FavoriteChanges.self).changes.isEmpty)
            // Naming Ana anywhere does not help Ben: the owner is the token's user.
            _ = try await api.call(.get, "/v1/favorites?experience=rijksmuseum&user=\(ana.id)", as: ben)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana)
                .decode(FavoriteIDs.self).itemIds == ["SK-C-5"])
            #expect(try await api.eventCount(of: ben) == 0)
            let anonymous = try await api.client.execute(uri: "/v1/favorites?experience=rijksmuseum", method: .get) { $0 }
            #expect(anonymous.status == .unauthorized)
        }
    }

    @Test func anUnknownItemOrExperienceIsRefusedAndNothingIsWritten() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let unknown = try await api.call(.put, "/v1/favorites/ticketmaster/unknown-id", as: ana)
            #expect(unknown.status == .notFound)
            #expect(try await api.call(.put, "/v1/favorites/netflix/x", as: ana).status == .notFound)
            let hostile = try await api.call(.put, "/v1/favorites/ticketmaster/..%2F..%2Fadmin", as: ana)
            #expect((400..<500).contains(Int(hostile.status.code)))
            #expect(try await api.call(.get, "/v1/favorites?experience=", as: ana).status == .badRequest)
            #expect(try await api.eventCount(of: ana) == 0)
        }
    }

    /// More deletions than one page of auth-service's feed: the poll goes on to the next page rather than reading
    /// the first one again and again.
    @Test func deletionsBeyondOnePageOfTheFeedAreErasedToo() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            _ = try await api.call(.put, Self.nightWatch, as: ana)
            let earlier = Date().addingTimeInterval(-10)
            let others = Set((0..<DeletedAccounts.pageSize).map { _ in UUID() })
            for user in others { api.authority.deletedAccounts.add(user, at: earlier) }
            api.authority.deletedAccounts.add(ana.id, at: earlier.addingTimeInterval(1))
            let left = try await eventually({ try await api.eventTypes(of: ana) }) { $0 == ["stream-erased"] }
            #expect(left == ["stream-erased"])
        }
    }

    @Test func aDeletedAccountsFavoritesAreErasedAndOthersKept() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let ben = try await api.user()
            _ = try await api.call(.put, Self.nightWatch, as: ana)
            _ = try await api.call(.put, Self.event, as: ana)
            _ = try await api.call(.put, Self.nightWatch, as: ben)
            api.authority.deletedAccounts.add(ana.id)
            // The service polls every second here; the erased events leave a tombstone that names nothing.
            let left = try await eventually({ try await api.eventTypes(of: ana) }) { $0.count == 1 }
            #expect(left == ["stream-erased"])
            try await Task.sleep(for: .milliseconds(2500))  // more polls see the same deletion again
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana)
                .decode(FavoriteIDs.self).itemIds.isEmpty)
            #expect(try await api.eventCount(of: ben) == 1)
            let audited = try await api.withPool { pool in
                try await pool.query("SELECT events_removed FROM event_erasures").values(Int.self)
            }
            #expect(audited == [2])
            #expect(try await api.eventTypes(of: ana) == ["stream-erased"])  // one audit row, even though every poll sees the deletion again
        }
    }

    /// With `REQUIRE_VERIFIED_EMAIL`, a token saying the email is not verified gets 403 `email-unverified`; one saying
    /// it is, or a token from before the claim existed, is served.
    @Test func anUnverifiedEmailIsRefusedWhereVerificationIsRequired() async throws {
        try await FavoritesHarness.run(environment: ["REQUIRE_VERIFIED_EMAIL": "true"]) { api in
            let unverified = try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum",
                                                as: try await api.user(emailVerified: false))
            #expect(unverified.status == .forbidden)
            #expect(unverified.problem?.type == .emailUnverified)
            for claim in [true, nil] as [Bool?] {
                let served = try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum",
                                                as: try await api.user(emailVerified: claim))
                #expect(served.status == .ok, "\(String(describing: claim))")
            }
        }
        try await FavoritesHarness.run { api in  // not required: served either way
            let served = try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum",
                                            as: try await api.user(emailVerified: false))
            #expect(served.status == .ok)
        }
    }

    /// `/metrics` counts the events a write appended, by type, and none for a write that changed nothing.
    @Test func appendedEventsAreCounted() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            _ = try await api.call(.put, Self.nightWatch, as: ana)
            _ = try await api.call(.put, Self.nightWatch, as: ana)  // already a favorite: no event
            _ = try await api.call(.delete, Self.nightWatch, as: ana)
            let text = String(buffer: try await api.call(.get, "/metrics", as: ana).body)
            #expect(text.contains(#"favorites_events_appended_total{type="favorite-added"} 1"#))
            #expect(text.contains(#"favorites_events_appended_total{type="favorite-removed"} 1"#))
        }
    }
}
