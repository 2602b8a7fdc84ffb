import Contracts
import Foundation

/// `DELETE /v1/favorites/{experience}/{itemId}`: the same for a saved item and a card the user wrote (see
/// ``FavoritesWriteStatements/unfavorite(_:of:_:)``).
struct UnfavoriteItem: Sendable {
    let writer: FavoritesWriter

    func callAsFunction(_ itemId: String, in experience: ExperienceID, by request: WriteRequest) async throws {
        let statement = FavoritesWriteStatements.unfavorite(itemId, of: experience, .init(request, at: Date()))
        try await writer.remove(statement, as: FavoriteEvent.removedType, of: request.user)
    }
}
