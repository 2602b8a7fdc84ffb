import Contracts
import Foundation
import Logging
import ServiceKit

/// `PUT /v1/favorites/{experience}/{itemId}`: the item is looked up in the catalog (its snapshot is what the
/// favorites tab shows), then added, unless it is a favorite already. A retry with the same `Idempotency-Key` gets
/// the first answer, without asking the catalog (which may be down meanwhile): the transaction finds the first
/// answer under the stream's lock, and a retry whose item is not in ``RecentItems`` looks for it before the lookup.
struct FavoriteItem: Sendable {
    let writer: FavoritesWriter
    let catalog: CatalogPeer
    /// Items looked up a moment ago, by any user: their snapshot, encoded, without another hop to the catalog.
    let recent: RecentItems
    /// Favorites one user may keep in one experience.
    let maximumFavorites: Int

    /// What the catalog lookup is made with: the caller's token (its trace travels in the task's context).
    struct CatalogCall: Sendable {
        var bearer: String
        var logger: Logger
    }

    /// What a favorite answers, and its favorite as stored when the answer's item is the one this write encoded (the
    /// usual case): the answer then carries those bytes, as the list does, instead of encoding the item again.
    struct Answer: Sendable {
        var favorited: Favorited
        var stored: StoredFavorite?
    }

    func callAsFunction(_ itemId: String, in experience: Experience, by request: WriteRequest, call: CatalogCall)
        async throws -> Answer
    {
        let encoded: FavoritesWriteStatements.EncodedSnapshot
        if let copy = recent.item(itemId, in: experience.id) {
            encoded = copy
        } else {
            if let eventID = request.eventID,
               let answer = try await writer.store.earlierEvent(eventID, of: request.user)?.answer {
                return Answer(favorited: answer)
            }
            let item = try await catalog.item(itemId, in: experience.id, bearer: call.bearer,
                                              requestID: request.requestID, logger: call.logger)
            encoded = try .init(FavoriteSnapshot(item: item))
            recent.remember(encoded)
        }
        // Favorites are keyed by the catalog's own spelling of the id (`SK-C-5`, not `sk-c-5`): another spelling
        // stored here could never be unfavorited by it, nor fill its heart.
        guard encoded.snapshot.itemId == itemId else { throw FavoritesRefusal.spelledOtherwise(encoded.snapshot.itemId) }
        let favorited = try await writer.favorite(encoded, as: FavoriteEvent.addedType, by: request,
                                                  freeTitle: experience.userWrittenItems ? encoded.snapshot.title : nil,
                                                  maximum: maximumFavorites)
        let favorite = favorited.favorite
        guard let item = encoded.item, favorite.item == encoded.snapshot.item else { return Answer(favorited: favorited) }
        return Answer(favorited: favorited,
                      stored: StoredFavorite(item: item, favoritedAt: favorite.favoritedAt, version: favorite.version))
    }
}
