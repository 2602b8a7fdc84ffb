import Contracts
import EventStore
import Foundation
import HTTPTypes
import Postgres
import ServiceKit

/// `GET /v1/favorites/changes?since=N`: the user's own changes after version N, oldest first, read from the log. A
/// position past the end of the log is refused: answering "nothing new" would let a device that holds another
/// account's position skip this account's changes for good.
struct ListChanges: Sendable {
    let store: FavoritesStore
    /// Events read per call; a full read tells the client there is more.
    static let limit = 500

    func callAsFunction(of user: UUID, since: Int64) async throws -> FavoriteChanges {
        let stream = FavoritesStore.stream(of: user)
        let (events, current) = try await store.pool.withSession { connection in
            let events = try await EventStore.read(stream, after: since, limit: Self.limit, on: connection)
            return (events, events.isEmpty ? try await EventStore.version(of: stream, on: connection) : since)
        }
        guard since <= current else {
            throw ServiceProblem(.conflict, .syncPositionAhead, "This account's changes end at version \(current); "
                                 + "since=\(since) is past them (a position kept from another account, or from before a "
                                 + "restore). Sync again from since=0.")
        }
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
