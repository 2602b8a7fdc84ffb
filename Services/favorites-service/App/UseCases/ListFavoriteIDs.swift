import Contracts
import Foundation
import Postgres

/// `GET /v1/favorites/ids?experience=`: the ids of the user's favorites in one experience, the hearts to fill.
struct ListFavoriteIDs: Sendable {
    let store: FavoritesStore

    /// The user's stream version, and the ids unless `isCurrent(version)` says the caller holds them.
    func callAsFunction(of user: UUID, in experience: ExperienceID,
                        unless isCurrent: @escaping @Sendable (Int64) -> Bool)
        async throws -> (version: Int64, ids: FavoriteIDs?)
    {
        let (version, ids) = try await store.versioned(user: user, unless: isCurrent) { connection in
            try await FavoritesStore.ids(user: user, experience: experience, on: connection)
        }
        return (version, ids.map { FavoriteIDs(experience: experience, itemIds: $0, version: version) })
    }
}
