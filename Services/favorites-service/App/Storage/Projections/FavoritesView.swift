import EventStore
import Foundation
import Postgres

/// The per-user favorites view as a projection of the log. Writers keep it up to date inline, one event at a time (in
/// the write's statement, see ``FavoritesWriteStatements``); a rebuild or a repair
/// replays the log a batch at a time, set-wise (``ViewBatch``), to the same rows.
struct FavoritesView: Projection {
    static let table = "favorites"
    let name = "favorites"
    let tables = [Self.table]

    func statements(for events: [RecordedEvent], in tables: ProjectionTables) throws -> [SQL] {
        try ViewBatch.favorites(try ViewBatch.effect(of: events), table: tables[Self.table])
    }

    /// Rebuilds one user's rows from their stream, under the stream's lock (their writes wait meanwhile). For repair:
    /// returns how many events were replayed.
    static func repair(user: UUID, pool: DatabasePool) async throws -> Int {
        try await pool.withTransaction { connection in
            let stream = FavoritesStore.stream(of: user)
            try await EventStore.lock(stream, on: connection)
            try await connection.query("DELETE FROM \(identifier: table) WHERE user_id = \(user)")
            var replayed = 0
            var version: Int64 = 0
            while true {
                let events = try await EventStore.read(stream, after: version, limit: 1000, on: connection)
                try await connection.pipeline(try FavoritesView().statements(for: events, in: ProjectionTables()))
                replayed += events.count
                guard let last = events.last, events.count == 1000 else { break }
                version = last.version
            }
            return replayed
        }
    }
}
