import CoreMetrics
import EventStore
import Foundation
import Postgres

/// The one transaction every write to a user's favorites runs, in one round trip: BEGIN, the stream's lock, the
/// command's one statement (``FavoritesWriteStatements``: it decides, appends, changes the view and reports), COMMIT,
/// sent together in one pipeline, shared with the writes that arrive meanwhile (``GroupCommit``). The commands
/// (``FavoriteItem``, ``UnfavoriteItem``, ``ClearFavorites``, ``WriteCard``) say which statement.
struct FavoritesWriter: Sendable {
    let store: FavoritesStore
    let commits: GroupCommit
    /// Tells every replica's projections and change streams after a write.
    let notifier: EventNotifier
    /// Counts `favorites_events_appended_total{type}`.
    let metrics: any MetricsFactory

    /// Runs `statement` on the user's stream and reads its one row with `read`, which says what it reports and the
    /// type of the event it appended, if any.
    func write<Report: Sendable>(
        _ statement: SQL, of user: UUID,
        read: @Sendable (PostgresRow) throws -> (report: Report, appended: String?)
    ) async throws -> Report {
        let stream = FavoritesStore.stream(of: user)
        let (report, appended) = try read(try await commits.commit(.init(stream: stream, statement: statement)).single())
        if let appended {
            Counter(label: "favorites_events_appended_total", dimensions: [("type", appended)], factory: metrics)
                .increment()
            notifier.eventsAppended(to: stream)
        }
        return report
    }

    /// Favorites `snapshot` (an event of `type`: a catalog item's or a card's) for `request`, at `now`; where users
    /// write items, `freeTitle` must not be another item's. A stream long enough to have reached `maximum` is sent
    /// again counting (a second transaction, which decides everything anew under the lock).
    func favorite(_ encoded: FavoritesWriteStatements.EncodedSnapshot, as type: String, by request: WriteRequest,
                  freeTitle: String?, maximum: Int) async throws -> Favorited {
        let now = Date().inPostgresPrecision  // the first answer's time equals its retry's, read back
        let write = FavoritesWriteStatements.Write(request, at: now)
        let snapshot = encoded.snapshot
        for counted in [false, true] {
            let statement = FavoritesWriteStatements.favorite(encoded, as: type, write, freeTitle: freeTitle,
                                                              maximum: maximum, counted: counted)
            let report = try await self.write(statement, of: request.user) { row in
                let report = try FavoritesWriteStatements.favoriteReport(row)
                let appended = report.outcome == .added ? type : FavoriteEvent.confirmedType
                return (report, report.appended ? appended : nil)
            }
            if let answer = try FavoritesCommands.favorited(snapshot, report, maximum: maximum, at: now) {
                return answer
            }
        }
        throw PostgresError.client("a counted favorite's statement asked to count")
    }

    /// Removes what the removal's `statement` covers (an event of `type`).
    func remove(_ statement: SQL, as type: String, of user: UUID) async throws {
        try await write(statement, of: user) { row in ((), try FavoritesWriteStatements.removalAppended(row) ? type : nil) }
    }
}

/// Who writes, and the request's identity: what every command needs besides its own input.
struct WriteRequest: Sendable {
    var user: UUID
    /// From the request's `Idempotency-Key` (nil without one): a retry carries the same id.
    var eventID: UUID?
    /// The id the request's event gets: `eventID`, or a new one.
    var id: UUID
    var requestID: String
    var metadata: EventMetadata { EventMetadata(requestID: requestID, actor: user.lowercasedText) }
    var hasIdempotencyKey: Bool { eventID != nil }
}
