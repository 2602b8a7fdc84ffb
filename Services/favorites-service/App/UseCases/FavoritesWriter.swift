import CoreMetrics
import EventStore
import Foundation
import Postgres

/// The one transaction every write to a user's favorites runs: lock the user's stream and read what the command
/// needs (one round trip), let the command decide from that state, then append its event, update the view and commit
/// (a second round trip). Commands (``FavoriteItem``, ``UnfavoriteItem``, ``ClearFavorites``, ``WriteCard``) are the
/// decisions; this is the only place their transaction is written.
struct FavoritesWriter: Sendable {
    let store: FavoritesStore
    /// Wakes the async projections after a write.
    let notifier: EventNotifier
    /// Counts `favorites_events_appended_total{type}`.
    let metrics: any MetricsFactory

    /// What a command decided: the event to record (none when nothing changes) and what to answer.
    struct Decision<Outcome: Sendable>: Sendable {
        var event: FavoriteEvent?
        var outcome: Outcome
    }

    /// Runs `decide` on the user's state under the stream's lock, and records its event with id `eventID` (from the
    /// request's `Idempotency-Key`, so that a retry is recognised; random without one) at `now`.
    func write<Outcome: Sendable>(
        user: UUID, eventID: UUID, reading reads: FavoritesStore.Reads, metadata: EventMetadata, at now: Date,
        decide: @escaping @Sendable (FavoritesStore.StreamState) throws -> Decision<Outcome>
    ) async throws -> Outcome {
        let (outcome, appended) = try await store.pool.withTransaction { connection -> (Outcome, String?) in
            let state = try await FavoritesStore.lock(user: user, checking: eventID, reading: reads, on: connection)
            let decision = try decide(state)
            guard let event = decision.event else { return (decision.outcome, nil) }
            let result = try await FavoritesStore.record(event, id: eventID, user: user, in: state.stream,
                                                         metadata: metadata, at: now, on: connection)
            return (decision.outcome, result.alreadyApplied ? nil : event.type)
        }
        if let appended {
            Counter(label: "favorites_events_appended_total", dimensions: [("type", appended)], factory: metrics)
                .increment()
            notifier.eventsAppended()
        }
        return outcome
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

/// Why a command refuses a write; the controller answers each with its problem.
enum FavoritesRefusal: Error, Equatable {
    /// The user keeps as many favorites in the experience as one may.
    case limitReached(count: Int, experience: String)
    /// The user keeps an item with this title already (a card written or saved).
    case titleTaken(by: String)
    /// The catalog spells the item's id otherwise.
    case spelledOtherwise(String)
    /// The experience has no items users write.
    case noWrittenItems(String)
}
