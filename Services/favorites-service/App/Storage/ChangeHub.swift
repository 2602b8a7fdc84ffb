import Contracts
import CoreMetrics
import EventStore
import Foundation
import Locking
import Logging
import Postgres
import ServiceKit
import ServiceLifecycle

/// The change streams open on this replica, and the replica's one LISTEN session that wakes them: a notification
/// names the streams a write touched (``EventNotifier``), and only their watchers wake and read the log. When the
/// session comes back after a loss, every watcher reads the log again, so nothing sent meanwhile is missed.
///
/// Each watcher holds a few flags, never events: a slow or stalled client costs the same memory as a quiet one, and
/// what it has not received stays in the log. A profile change (``ProfileFeed``) is held as the newest one only. A
/// ticker ends the streams whose access token expired or whose session auth-service ended (within the revocation poll
/// plus ``checkInterval``), and sends every stream a heartbeat.
final class ChangeHub: Service, Sendable {
    /// Why a stream ends, as its last event says.
    enum Ending: String, Sendable {
        case tokenExpired = "token-expired"
        case sessionEnded = "session-ended"
        case shuttingDown = "shutting-down"
        /// The client closed the connection: nothing more is sent, and the stream's place is free at once.
        case clientGone = "client-gone"
    }

    /// One open stream's wake-ups.
    final class Watcher: Sendable {
        struct Pending: Sendable {
            var changed = false
            var heartbeat = false
            var ending: Ending?
            /// The user's profile as it last changed (``ProfileFeed``), not yet sent: only the newest is kept.
            var profile: ProfileChange?
        }

        let user: AuthenticatedUser
        let wakeUps: AsyncStream<Void>
        private let wake: AsyncStream<Void>.Continuation
        private let pending = Locked(Pending())

        init(user: AuthenticatedUser) {
            self.user = user
            (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        func signal(_ update: (inout Pending) -> Void) {
            pending.withLock(update)
            wake.yield()
        }

        /// What happened since the last call; an ending stays.
        func take() -> Pending {
            pending.withLock { pending in
                defer { pending = Pending(ending: pending.ending) }
                return pending
            }
        }

        fileprivate func close() { wake.finish() }
    }

    private struct Watchers {
        var byUser: [UUID: [ObjectIdentifier: Watcher]] = [:]
        var count = 0
    }

    let listener: PostgresListener
    let revocations: (any SessionRevocations)?
    let capacity: Int
    /// Streams one user may hold on this replica: enough for their devices, too few to crowd out other users.
    let perUser: Int
    let heartbeat: Duration
    let checkInterval: Duration
    let logger: Logger
    private let watchers = Locked(Watchers())
    private let open: Gauge

    init(listener: PostgresListener, revocations: (any SessionRevocations)?, capacity: Int, perUser: Int,
         heartbeat: Duration, checkInterval: Duration = .milliseconds(500), logger: Logger,
         metrics: any MetricsFactory) {
        self.listener = listener
        self.revocations = revocations
        self.capacity = capacity
        self.perUser = perUser
        self.heartbeat = heartbeat
        self.checkInterval = checkInterval
        self.logger = logger
        open = Gauge(label: "favorites_streams_open", factory: metrics)
    }

    /// A watcher for `user`'s stream; refused when the user holds ``perUser`` streams here already, or the replica
    /// as many as it may.
    func watch(_ user: AuthenticatedUser) throws(FavoritesRefusal) -> Watcher {
        let watcher = Watcher(user: user)
        let count = watchers.withLock { watchers -> Result<Int, FavoritesRefusal> in
            guard watchers.byUser[user.userID, default: [:]].count < perUser else {
                return .failure(.tooManyStreams(perUser))
            }
            guard watchers.count < capacity else { return .failure(.streamsFull) }
            watchers.byUser[user.userID, default: [:]][ObjectIdentifier(watcher)] = watcher
            watchers.count += 1
            return .success(watchers.count)
        }
        open.record(try count.get())
        return watcher
    }

    /// Hands a change of `change.userId`'s profile to that user's streams on this replica.
    func profileChanged(_ change: ProfileChange) {
        let woken = watchers.withLock { $0.byUser[change.userId].map { Array($0.values) } ?? [] }
        for watcher in woken {
            watcher.signal { pending in
                if (pending.profile?.version ?? .min) < change.version { pending.profile = change }
            }
        }
    }

    func stopWatching(_ watcher: Watcher) {
        let count = watchers.withLock { watchers in
            let id = ObjectIdentifier(watcher)
            if watchers.byUser[watcher.user.userID]?.removeValue(forKey: id) != nil { watchers.count -= 1 }
            if watchers.byUser[watcher.user.userID]?.isEmpty == true { watchers.byUser[watcher.user.userID] = nil }
            return watchers.count
        }
        open.record(count)
        watcher.close()
    }

    /// Listens and ticks until shutdown. The streams end before (see ChangeStreamRoute): the server stops first.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.listen() }
                group.addTask { await self.tick() }
            }
        }
    }

    private func listen() async {
        for await event in listener.events() {
            switch event {
            case .listening:
                for watcher in all() { watcher.signal { $0.changed = true } }
            case .notification(let notification):
                // No stream open on this replica: nothing to wake, and no payload to read (it may name hundreds).
                guard watchers.withLock({ !$0.byUser.isEmpty }) else { continue }
                let users = Set(EventNotifier.streams(in: notification.payload)
                    .compactMap { FavoritesStore.user(ofStream: String($0)) })
                let woken = watchers.withLock { watchers in
                    users.flatMap { user in watchers.byUser[user].map { Array($0.values) } ?? [] }
                }
                for watcher in woken { watcher.signal { $0.changed = true } }
            }
        }
    }

    private func tick() async {
        var sinceHeartbeat = Duration.zero
        while !Task.isCancelled {
            try? await Task.sleep(for: checkInterval)
            sinceHeartbeat += checkInterval
            let beat = sinceHeartbeat >= heartbeat
            if beat { sinceHeartbeat = .zero }
            let now = Date()
            for watcher in all() {
                let ending: Ending? = if let expiry = watcher.user.expiresAt, expiry <= now {
                    .tokenExpired
                } else if (try? await revocations?.isRevoked(watcher.user)) == true {
                    .sessionEnded
                } else {
                    nil
                }
                if ending != nil || beat {
                    watcher.signal { pending in
                        pending.heartbeat = pending.heartbeat || beat
                        pending.ending = pending.ending ?? ending
                    }
                }
            }
        }
    }

    private func all() -> [Watcher] {
        watchers.withLock { watchers in watchers.byUser.values.flatMap(\.values) }
    }

}
