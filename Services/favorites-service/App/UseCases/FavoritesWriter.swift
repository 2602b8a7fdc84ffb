import CoreMetrics
import EventStore
import Foundation
import Postgres

/// The one transaction every write to a user's favorites runs, in a straight line of two statements: read the
/// user's ``WriteState`` under their stream's lock, let the command decide on it (a pure function of the domain,
/// ``FavoritesCommands``), then append its event, update the view and commit. The commands (``FavoriteItem``,
/// ``UnfavoriteItem``, ``ClearFavorites``, ``WriteCard``) say what to read and how to decide; this is the only place
/// their transaction is written.
struct FavoritesWriter: Sendable {
    let store: FavoritesStore
    /// Tells every replica's projections and change streams after a write.
    let notifier: EventNotifier
    /// Counts `favorites_events_appended_total{type}`.
    let metrics: any MetricsFactory

    /// Reads `query` of the user's favorites, decides with `decide` and records its event (with the request's id, so
    /// that a retry is recognised) at `now`.
    func write<Outcome: Sendable>(
        _ query: FavoritesStore.WriteQuery, by request: WriteRequest, at now: Date,
        decide: @Sendable (WriteState) throws(FavoritesRefusal) -> Decision<Outcome>
    ) async throws -> Outcome {
        let decision = try await store.pool.withTransaction { connection in
            let state = try await FavoritesStore.state(of: request.user, for: query, event: request.id, on: connection)
            let decision = try decide(state)
            if let event = decision.event {
                try await FavoritesStore.append(event, id: request.id, user: request.user, after: state.version,
                                                metadata: request.metadata, at: now, on: connection)
            }
            return decision
        }
        if let event = decision.event {
            Counter(label: "favorites_events_appended_total", dimensions: [("type", event.type)], factory: metrics)
                .increment()
            notifier.eventsAppended(to: FavoritesStore.stream(of: request.user))
        }
        return decision.outcome
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
    var metadata: EventMetadata { EventMetadata(requestID: requestID, actor: user.uuidString.lowercased()) }
    var hasIdempotencyKey: Bool { eventID != nil }
}
