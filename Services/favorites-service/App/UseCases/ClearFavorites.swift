import Contracts
import Foundation

/// `DELETE /v1/favorites?experience=`: every favorite of one experience, in one event (see
/// ``FavoritesWriteStatements/clear(_:_:)``).
struct ClearFavorites: Sendable {
    let writer: FavoritesWriter

    func callAsFunction(_ experience: ExperienceID, by request: WriteRequest) async throws {
        let statement = FavoritesWriteStatements.clear(experience, .init(request, at: Date()))
        try await writer.remove(statement, as: FavoriteEvent.clearedType, of: request.user)
    }
}
