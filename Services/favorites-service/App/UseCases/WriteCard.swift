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
        let eventID = request.id
        let snapshot = FavoriteSnapshot(card: card, experience: experience.id, itemId: Card.itemID(for: eventID))
        let now = Date()
        let reads = FavoritesStore.Reads(experience: experience.id, count: true, title: card.title,
                                         originalAnswer: request.hasIdempotencyKey)
        let maximum = maximumFavorites
        return try await writer.write(user: request.user, eventID: eventID, reading: reads,
                                      metadata: request.metadata, at: now) { state in
            if let original = state.originalAnswer { return .init(event: nil, outcome: original.favorite) }
            guard FavoritesCommands.hasRoom(for: nil, count: state.count, maximum: maximum) else {
                throw FavoritesRefusal.limitReached(count: state.count, experience: experience.id.rawValue)
            }
            if let holder = state.titleHolder { throw FavoritesRefusal.titleTaken(by: holder.title) }
            return .init(event: .cardWritten(snapshot), outcome: Favorite(snapshot, favoritedAt: now))
        }
    }
}
