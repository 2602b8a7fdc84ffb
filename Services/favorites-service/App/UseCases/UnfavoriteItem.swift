import Contracts
import Foundation

/// `DELETE /v1/favorites/{experience}/{itemId}`: the same for a saved item and a card the user wrote. Nothing to
/// remove changes nothing, unless the request carries an `Idempotency-Key` (its event is how a retry is recognised,
/// and a retry must not remove what was favorited after the first request).
struct UnfavoriteItem: Sendable {
    let writer: FavoritesWriter

    func callAsFunction(_ itemId: String, in experience: ExperienceID, by request: WriteRequest) async throws {
        let keyed = request.hasIdempotencyKey
        try await writer.write(user: request.user, eventID: request.id,
                               reading: .init(experience: experience, item: itemId), metadata: request.metadata,
                               at: Date()) { state in
            guard !(keyed && state.isRetry) else { return .init(event: nil, outcome: ()) }
            return .init(event: FavoritesCommands.unfavorite(experience: experience, itemId: itemId,
                                                             isFavorite: state.item != nil, hasIdempotencyKey: keyed),
                         outcome: ())
        }
    }
}

/// `DELETE /v1/favorites?experience=`: every favorite of one experience, in one event. A retry with the same
/// `Idempotency-Key` changes nothing, even if favorites were added since.
struct ClearFavorites: Sendable {
    let writer: FavoritesWriter

    func callAsFunction(_ experience: ExperienceID, by request: WriteRequest) async throws {
        let keyed = request.hasIdempotencyKey
        try await writer.write(user: request.user, eventID: request.id,
                               reading: .init(experience: experience, count: true), metadata: request.metadata,
                               at: Date()) { state in
            guard !(keyed && state.isRetry) else { return .init(event: nil, outcome: ()) }
            return .init(event: FavoritesCommands.clear(experience: experience, favoriteCount: state.count,
                                                        hasIdempotencyKey: keyed),
                         outcome: ())
        }
    }
}
