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
                        matching text: String?, limit: Int, unless isCurrent: (Int64) -> Bool)
        async throws -> (version: Int64, page: StoredFavoritePage?)
    {
        // One row more than shown: whether there is a next page.
        let (version, result) = try await store.versioned(user: user, reading: FavoritesStore.page(
            user: user, experience: experience, after: cursor, matching: text, limit: limit + 1))
        guard !isCurrent(version) else { return (version, nil) }
        let rows = result.rows
        let shown = rows.prefix(limit)
        let next = try rows.count > limit ? shown.last.map { row in
            let version = try row.decode(Int64.self, column: "version")
            return FavoritePageCursor(after: try FavoritesStore.snapshot(row), version: version, sort: sort).encoded
        } : nil
        return (version, StoredFavoritePage(items: try shown.map(FavoritesStore.stored), nextCursor: next,
                                            version: version))
    }
}
