import Contracts
import Foundation
import Postgres

/// `GET /v1/favorites/ids?experience=`: the ids of the user's favorites in one experience, the hearts to fill.
struct ListFavoriteIDs: Sendable {
    let store: FavoritesStore

    /// The user's stream version, and the ids unless `isCurrent(version)` says the caller holds them.
    func callAsFunction(of user: UUID, in experience: ExperienceID,
                        unless isCurrent: (Int64) -> Bool)
        async throws -> (version: Int64, ids: FavoriteIDs?)
    {
        let (version, rows) = try await store.versioned(user: user,
                                                        reading: FavoritesStore.ids(user: user, experience: experience))
        guard !isCurrent(version) else { return (version, nil) }
        return (version, FavoriteIDs(experience: experience, itemIds: try rows.values(String.self), version: version))
    }
}
