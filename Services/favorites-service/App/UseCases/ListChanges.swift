import Contracts
import EventStore
import Foundation
import Postgres

/// `GET /v1/favorites/changes?since=N`: the user's own changes after version N, oldest first, read from the log.
struct ListChanges: Sendable {
    let store: FavoritesStore
    /// Events read per call; a full read tells the client there is more.
    static let limit = 500

    func callAsFunction(of user: UUID, since: Int64) async throws -> FavoriteChanges {
        let events = try await EventStore.read(FavoritesStore.stream(of: user), after: since, limit: Self.limit,
                                               pool: store.pool)
        let changes = events.compactMap { event -> FavoriteChange? in
            switch FavoriteEvent.decode(type: event.type, schemaVersion: event.schemaVersion,
                                        data: Data(event.data.utf8)) {
            case .added(let item), .cardWritten(let item):
                FavoriteChange(version: event.version, kind: .added, experience: ExperienceID(rawValue: item.experience),
                               itemId: item.itemId, at: event.recordedAt,
                               favorite: Favorite(item, favoritedAt: event.recordedAt))
            case .removed(let experience, let itemId):
                FavoriteChange(version: event.version, kind: .removed, experience: experience, itemId: itemId,
                               at: event.recordedAt)
            case .cleared(let experience):
                FavoriteChange(version: event.version, kind: .cleared, experience: experience, itemId: nil,
                               at: event.recordedAt)
            case .confirmed, .erased, nil: nil  // a confirmed favorite changed nothing
            }
        }
        return FavoriteChanges(changes: changes, version: events.last?.version ?? since,
                               hasMore: events.count == Self.limit)
    }
}
