import Contracts
import Foundation

/// `POST /v1/favorites/cards?experience=`: a card the user writes (a title and at least two facts), kept among
/// their favorites in the same shape as a saved one, with an id the server gives it. No two of the user's cards
/// share a title (without case or surrounding spaces), written or saved; two concurrent writes of one title leave
/// one card, as both are decided under the stream's lock. A retry with the same `Idempotency-Key` gets the first
/// answer.
struct WriteCard: Sendable {
    let writer: FavoritesWriter
    let maximumFavorites: Int

    func callAsFunction(_ card: Card, in experience: Experience, by request: WriteRequest) async throws -> Favorite {
        guard experience.userWrittenItems else { throw FavoritesRefusal.noWrittenItems(experience.id.rawValue) }
        let snapshot = FavoriteSnapshot(card: card, experience: experience.id, itemId: Card.itemID(for: request.id))
        return try await writer.favorite(try .init(snapshot), as: FavoriteEvent.cardWrittenType, by: request,
                                         freeTitle: card.title, maximum: maximumFavorites).favorite
    }
}
