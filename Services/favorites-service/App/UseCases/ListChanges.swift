import Contracts
import EventStore
import Foundation
import Postgres

/// `GET /v1/favorites/changes?since=N`: the user's own changes after version N, oldest first, read from the log. A
/// position past the end of the log is refused: answering "nothing new" would let a device that holds another
/// account's position skip this account's changes for good.
struct ListChanges: Sendable {
    let store: FavoritesStore
    /// Events read per call; a full read tells the client there is more.
    static let limit = 500

    func callAsFunction(of user: UUID, since: Int64) async throws
        -> (changes: [StoredChange], version: Int64, hasMore: Bool)
    {
        let stream = FavoritesStore.stream(of: user)
        let (events, current) = try await store.pool.withSession { connection in
            let events = try await EventStore.read(stream, after: since, limit: Self.limit, on: connection)
            return (events, events.isEmpty ? try await EventStore.version(of: stream, on: connection) : since)
        }
        guard since <= current else { throw FavoritesRefusal.positionAhead(of: current, asked: since) }
        return (events.compactMap(StoredChange.init), events.last?.version ?? since, events.count == Self.limit)
    }
}
