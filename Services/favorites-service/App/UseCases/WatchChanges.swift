import Contracts
import EventStore
import Foundation
import Postgres
import ServiceKit

/// `GET /v1/favorites/stream`: the user's changes as they happen, for one experience or all, each carrying its
/// version in the user's log. It starts after the position the client gives (its last event's id) and resumes exactly
/// there: what happened while it was away is read from the log first, in order, then every change as it is written
/// on any replica. A client further behind than one read gets a single `reload` instead of a flood. A change of the
/// user's profile (experience, preferences, display name) made on any device comes as a `profile`. The stream ends
/// when its access token expires or its session ends (the client reconnects with a fresh token), and when the
/// replica shuts down (the client reconnects to another).
struct WatchChanges: Sendable {
    let store: FavoritesStore
    let hub: ChangeHub
    /// Events read at a time; a client further behind is told to reload.
    static let batch = ListChanges.limit

    /// What the stream sends, in order.
    enum Message: Sendable, Equatable {
        /// The position the stream starts from (the first message).
        case ready(version: Int64)
        case change(StoredChange)
        /// Too far behind to catch up change by change: read the list again; the stream goes on from `version`.
        case reload(version: Int64)
        /// The user's profile changed (on any device): it does not move the position.
        case profile(ProfileChange)
        case heartbeat
        case end(ChangeHub.Ending)
    }

    /// An open stream, its position checked and its watcher registered: ``run(sending:)`` sends its messages.
    struct Stream: Sendable {
        fileprivate let watch: WatchChanges
        fileprivate let watcher: ChangeHub.Watcher
        fileprivate let experience: ExperienceID?
        fileprivate let start: Int64

        /// Ends the stream after what it is sending now.
        func end(_ ending: ChangeHub.Ending) {
            watcher.signal { $0.ending = $0.ending ?? ending }
        }

        /// Sends the messages until the stream ends, or `send` throws (the client went away).
        func run(sending send: (Message) async throws -> Void) async throws {
            defer { watch.hub.stopWatching(watcher) }
            try await send(.ready(version: start))
            var position = start
            var wakeUps = watcher.wakeUps.makeAsyncIterator()
            var catchUpFirst = true  // what was written before the watcher was registered
            repeat {
                let pending = watcher.take()
                if pending.changed || catchUpFirst {
                    catchUpFirst = false
                    position = try await watch.catchUp(user: watcher.user.userID, after: position,
                                                       experience: experience, sending: send)
                }
                if let profile = pending.profile { try await send(.profile(profile)) }
                if let ending = pending.ending { return try await send(.end(ending)) }
                if pending.heartbeat { try await send(.heartbeat) }
            } while await wakeUps.next() != nil
        }
    }

    /// Opens `user`'s stream after `after` (nil: from now). Refuses a position past the end of the log, a user who
    /// holds as many streams as one may (429), and a replica that holds as many as it may (503).
    func open(for user: AuthenticatedUser, experience: ExperienceID?, after: Int64?) async throws -> Stream {
        let watcher = try hub.watch(user)
        do {
            let current = try await store.pool.withSession { connection in
                try await EventStore.version(of: FavoritesStore.stream(of: user.userID), on: connection)
            }
            if let after, after > current { throw FavoritesRefusal.positionAhead(of: current, asked: after) }
            return Stream(watch: self, watcher: watcher, experience: experience, start: after ?? current)
        } catch {
            hub.stopWatching(watcher)
            throw error
        }
    }

    /// Sends what the log holds after `position`, and returns the new position.
    private func catchUp(user: UUID, after position: Int64, experience: ExperienceID?,
                         sending send: (Message) async throws -> Void) async throws -> Int64 {
        let stream = FavoritesStore.stream(of: user)
        let events = try await EventStore.read(stream, after: position, limit: Self.batch + 1, pool: store.pool)
        guard events.count <= Self.batch else {
            let current = try await store.pool.withSession { try await EventStore.version(of: stream, on: $0) }
            try await send(.reload(version: current))
            return current
        }
        for change in events.compactMap(StoredChange.init)
        where experience == nil || change.change.experience == experience {
            try await send(.change(change))
        }
        return events.last?.version ?? position
    }
}
