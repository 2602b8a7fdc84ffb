import Contracts
import Foundation

/// `DELETE /v1/favorites/{experience}/{itemId}`: the same for a saved item and a card the user wrote (see
/// ``FavoritesCommands/unfavorite(_:of:in:isKeyed:)``).
struct UnfavoriteItem: Sendable {
    let writer: FavoritesWriter

    func callAsFunction(_ itemId: String, in experience: ExperienceID, by request: WriteRequest) async throws {
        let keyed = request.hasIdempotencyKey
        try await writer.write(.init(experience: experience, item: itemId), by: request, at: Date()) { state in
            Decision(event: FavoritesCommands.unfavorite(itemId, of: experience, in: state, isKeyed: keyed), outcome: ())
        }
    }
}

/// `DELETE /v1/favorites?experience=`: every favorite of one experience, in one event (see
/// ``FavoritesCommands/clear(_:in:isKeyed:)``).
struct ClearFavorites: Sendable {
    let writer: FavoritesWriter

    func callAsFunction(_ experience: ExperienceID, by request: WriteRequest) async throws {
        let keyed = request.hasIdempotencyKey
        try await writer.write(.init(experience: experience), by: request, at: Date()) { state in
            Decision(event: FavoritesCommands.clear(experience, in: state, isKeyed: keyed), outcome: ())
        }
    }
}
