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

/// Retries: a request sent again with its `Idempotency-Key` is answered as the first was and applied once, whatever
/// happened in between.
extension FavoritesAPITests {
    @Test func aRetryWithTheSameIdempotencyKeyIsAppliedOnce() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let key: HTTPFields = [.idempotencyKey: "tap-1"]
            let first = try await api.call(.put, Self.event, as: ana, headers: key)
            #expect(first.status == .created)
            #expect(try await api.call(.delete, Self.event, as: ana).status == .noContent)
            // The first PUT's response was lost; the app retries it after the user already unfavorited: it gets the
            // first answer again, and nothing is written.
            try Self.expectFirstAnswer(try await api.call(.put, Self.event, as: ana, headers: key), of: first)
            #expect(try await api.eventCount(of: ana) == 2)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
                .decode(FavoriteIDs.self).itemIds.isEmpty)
        }
    }

    @Test func aRetryIsAnsweredWhileTheCatalogIsDown() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let key: HTTPFields = [.idempotencyKey: "tap-2"]
            let first = try await api.call(.put, Self.event, as: ana, headers: key)
            #expect(first.status == .created)
            api.catalogLink.stop()
            // A new favorite needs the catalog, which is gone...
            let other = try await api.call(.put, "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju", as: ana)
            #expect(other.status == .serviceUnavailable)
            #expect(other.problem?.type == .catalogUnavailable)
            // ...but the retry of a request already applied does not: it gets the first answer again.
            let retry = try await api.call(.put, Self.event, as: ana, headers: key)
            #expect(retry.status == .created)
            #expect(try retry.decode(Favorite.self).item.id == "G5diZfkn0B-bh")
            #expect(try await api.eventCount(of: ana) == 1)
        }
    }

    @Test func aFavoriteOfAFavoriteRetriedWithItsKeyDoesNotBringItBack() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let added = try await api.call(.put, Self.event, as: ana)  // from one device
            #expect(added.status == .created)
            let key: HTTPFields = [.idempotencyKey: "heart-again-1"]
            // Another device favorites it too: already a favorite, 200, and with a key the answer is remembered...
            let confirmed = try await api.call(.put, Self.event, as: ana, headers: key)
            #expect(confirmed.status == .ok)
            _ = try await api.call(.delete, Self.event, as: ana)  // ...then the first device unfavorites it
            // ...and the retry of that PUT (its response was lost) gets its first answer again, without favoriting.
            try Self.expectFirstAnswer(try await api.call(.put, Self.event, as: ana, headers: key), of: confirmed)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
                .decode(FavoriteIDs.self).itemIds.isEmpty)
            #expect(try await api.eventTypes(of: ana)
                == [FavoriteEvent.addedType, FavoriteEvent.confirmedType, FavoriteEvent.removedType])
            // The remembered answer changes nothing in the feed (ProjectionAPITests checks the popular counts).
            let changes = try await api.call(.get, "/v1/favorites/changes?since=0", as: ana).decode(FavoriteChanges.self)
            #expect(changes.changes.map(\.kind) == [.added, .removed])
            #expect(changes.version == 3)
            // Without a key, a favorite of a favorite still writes nothing.
            _ = try await api.call(.put, Self.event, as: ana)
            #expect(try await api.call(.put, Self.event, as: ana).status == .ok)
            #expect(try await api.eventCount(of: ana) == 4)
        }
    }

    @Test func anUnfavoriteOfNothingRetriedWithItsKeySparesALaterFavorite() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let key: HTTPFields = [.idempotencyKey: "unheart-1"]
            // Not a favorite yet: the unfavorite changes nothing, but with a key it is remembered...
            #expect(try await api.call(.delete, Self.event, as: ana, headers: key).status == .noContent)
            _ = try await api.call(.put, Self.event, as: ana)  // ...then another device favorites the item
            // ...and the retry of the first unfavorite (its response was lost) does not remove it.
            #expect(try await api.call(.delete, Self.event, as: ana, headers: key).status == .noContent)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
                .decode(FavoriteIDs.self).itemIds == ["G5diZfkn0B-bh"])
            // Without a key, an unfavorite of nothing still writes nothing.
            #expect(try await api.call(.delete, "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju", as: ana).status
                    == .noContent)
            #expect(try await api.eventTypes(of: ana) == [FavoriteEvent.removedType, FavoriteEvent.addedType])
        }
    }

    @Test func aClearRetriedWithItsKeyLeavesLaterFavoritesAlone() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let key: HTTPFields = [.idempotencyKey: "clear-1"]
            _ = try await api.call(.put, Self.event, as: ana)
            _ = try await api.call(.put, Self.nightWatch, as: ana)
            #expect(try await api.call(.delete, "/v1/favorites?experience=ticketmaster", as: ana, headers: key).status
                    == .noContent)
            // Another device favorites something; then the first clear is retried (its response was lost).
            _ = try await api.call(.put, "/v1/favorites/ticketmaster/vv17FZfdGkSrrMju", as: ana)
            #expect(try await api.call(.delete, "/v1/favorites?experience=ticketmaster", as: ana, headers: key).status
                    == .noContent)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=ticketmaster", as: ana)
                .decode(FavoriteIDs.self).itemIds == ["vv17FZfdGkSrrMju"])
            // The same key on a clear of another experience is another request.
            #expect(try await api.call(.delete, "/v1/favorites?experience=rijksmuseum", as: ana, headers: key).status
                    == .noContent)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana)
                .decode(FavoriteIDs.self).itemIds.isEmpty)
            #expect(try await api.eventTypes(of: ana).filter { $0 == FavoriteEvent.clearedType }.count == 2)
            // A keyed clear that found nothing to remove is remembered too: its retry spares what came since.
            let emptyKey: HTTPFields = [.idempotencyKey: "clear-2"]
            #expect(try await api.call(.delete, "/v1/favorites?experience=rijksmuseum", as: ana, headers: emptyKey)
                .status == .noContent)
            _ = try await api.call(.put, Self.nightWatch, as: ana)
            #expect(try await api.call(.delete, "/v1/favorites?experience=rijksmuseum", as: ana, headers: emptyKey)
                .status == .noContent)
            #expect(try await api.call(.get, "/v1/favorites/ids?experience=rijksmuseum", as: ana)
                .decode(FavoriteIDs.self).itemIds == ["SK-C-5"])
        }
    }

    @Test func anIdempotencyKeyOutOfBoundsIsRefusedAndWritesNothing() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            for key in ["", String(repeating: "k", count: 201)] {
                let response = try await api.call(.put, Self.event, as: ana, headers: [.idempotencyKey: key])
                #expect(response.status == .badRequest)
                #expect(response.problem?.errors?.map(\.field) == ["Idempotency-Key"])
            }
            #expect(try await api.eventCount(of: ana) == 0)
        }
    }
}
