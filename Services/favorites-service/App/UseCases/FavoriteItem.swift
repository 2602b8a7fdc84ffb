import Contracts
import Foundation
import Logging

/// `PUT /v1/favorites/{experience}/{itemId}`: the item is looked up in the catalog (its snapshot is what the
/// favorites tab shows), then added, unless it is a favorite already. A retry with the same `Idempotency-Key` gets
/// the first answer, without asking the catalog (which may be down meanwhile): the transaction finds the first
/// answer under the stream's lock, and a retry whose item is not in ``RecentItems`` looks for it before the lookup.
struct FavoriteItem: Sendable {
    let writer: FavoritesWriter
    let catalog: CatalogLookup
    /// Items looked up a moment ago, by any user: their snapshot without another hop to the catalog.
    let recent: RecentItems
    /// Favorites one user may keep in one experience.
    let maximumFavorites: Int

    enum Outcome: Sendable, Equatable {
        case created(Favorite)
        case existing(Favorite)
    }

    /// What the catalog lookup is made with: the caller's token and trace.
    struct CatalogCall: Sendable {
        var bearer: String
        var traceparent: String
        var logger: Logger
    }

    func callAsFunction(_ itemId: String, in experience: Experience, by request: WriteRequest, call: CatalogCall)
        async throws -> Outcome
    {
        let item: CatalogItem
        if let copy = recent.item(itemId, in: experience.id) {
            item = copy
        } else {
            if let eventID = request.eventID,
               let original = try await writer.store.originalAnswer(of: eventID, user: request.user) {
                return original.created ? .created(original.favorite) : .existing(original.favorite)
            }
            item = try await catalog.item(experience: experience.id, id: itemId, bearer: call.bearer,
                                          requestID: request.requestID, traceparent: call.traceparent,
                                          logger: call.logger)
            recent.remember(item)
        }
        // Favorites are keyed by the catalog's own spelling of the id (`SK-C-5`, not `sk-c-5`): another spelling
        // stored here could never be unfavorited by it, nor fill its heart.
        guard item.id == itemId else { throw FavoritesRefusal.spelledOtherwise(item.id) }
        let snapshot = FavoriteSnapshot(item: item)
        let keyed = request.hasIdempotencyKey
        let now = Date()
        let reads = FavoritesStore.Reads(experience: experience.id, item: item.id, count: true,
                                         title: experience.userWrittenItems ? snapshot.title : nil,
                                         originalAnswer: keyed)
        let maximum = maximumFavorites
        return try await writer.write(user: request.user, eventID: request.id, reading: reads,
                                      metadata: request.metadata, at: now) { state in
            // A retry gets what the first request got, before any check: even if the item was removed since.
            if let original = state.originalAnswer {
                return .init(event: nil, outcome: original.created ? .created(original.favorite) : .existing(original.favorite))
            }
            guard FavoritesCommands.hasRoom(for: state.item, count: state.count, maximum: maximum) else {
                throw FavoritesRefusal.limitReached(count: state.count, experience: experience.id.rawValue)
            }
            guard FavoritesCommands.titleIsFree(for: item.id, holder: state.titleHolder) else {
                throw FavoritesRefusal.titleTaken(by: state.titleHolder?.title ?? snapshot.title)
            }
            // Already a favorite: nothing to write, unless the answer must be remembered for a retry.
            let event = FavoritesCommands.favorite(snapshot, current: state.item, hasIdempotencyKey: keyed)
            return .init(event: event, outcome: state.item.map(Outcome.existing) ?? .created(Favorite(snapshot, favoritedAt: now)))
        }
    }
}
