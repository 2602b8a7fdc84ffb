import Contracts
import Foundation
import Postgres

/// `GET /v1/favorites?experience=&sort=&q=`: a page of the user's favorites from the per-user view, in one of the
/// experience's favorite sorts, filtered by text. Keyset pages: an offset would skip or repeat items when favorites
/// change between pages.
struct ListFavorites: Sendable {
    let store: FavoritesStore

    /// The user's stream version, and the page after `cursor` unless `isCurrent(version)` says the caller holds it.
    func callAsFunction(of user: UUID, in experience: ExperienceID, sort: FavoriteSort, after cursor: FavoritePageCursor,
                        matching text: String?, limit: Int, unless isCurrent: @escaping @Sendable (Int64) -> Bool)
        async throws -> (version: Int64, page: StoredFavoritePage?)
    {
        let (version, rows) = try await store.versioned(user: user, unless: isCurrent) { connection in
            // One row more than shown: whether there is a next page.
            try await FavoritesStore.page(user: user, experience: experience, after: cursor, matching: text,
                                          limit: limit + 1, on: connection)
        }
        guard let rows else { return (version, nil) }
        let shown = rows.prefix(limit)
        let next = rows.count > limit ? shown.last.map {
            FavoritePageCursor(after: $0.columns, version: $0.stored.version, sort: sort).encoded
        } : nil
        return (version, StoredFavoritePage(items: shown.map(\.stored), nextCursor: next, version: version))
    }
}
