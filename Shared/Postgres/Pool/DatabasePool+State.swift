import PostgresSession

/// The pool's books: free capacity, leased sessions and callers waiting in line, kept under the pool's lock.
extension DatabasePool {
    /// Free capacity: a ready session, or room for one.
    enum Slot: Sendable {
        case ready(PostgresConnection)
        case empty
    }

    struct State {
        var freeSlots: [Slot]
        /// Sessions leased now (a few dozen at most: a scan costs less than hashing).
        var leased: [PostgresConnection] = []
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        var closed = false
        var drained: CheckedContinuation<Void, Never>?
        var backoff: Duration
        var retryAfter: ContinuousClock.Instant?
        var reaper: Task<Void, Never>?

        var gauges: Gauges {
            Gauges(
                inUse: leased.count,
                idle: freeSlots.reduce(0) { count, slot in if case .ready = slot { count + 1 } else { count } },
                waiters: waiters.count
            )
        }

        mutating func removeLeased(_ connection: PostgresConnection) {
            guard let index = leased.firstIndex(where: { $0 === connection }) else { return }
            leased.swapAt(index, leased.count - 1)
            leased.removeLast()
        }

        /// Gives freed capacity to the longest waiter (returned, to be resumed outside the lock), or back to the
        /// free list.
        mutating func hand(_ slot: Slot) -> (Waiter, Slot)? {
            guard !waiters.isEmpty else {
                freeSlots.append(slot)
                return nil
            }
            return (waiters.removeFirst(), slot)
        }

        /// The continuation of a ``DatabasePool/close()`` waiting for the last leased session, once there is none.
        mutating func takeDrained() -> CheckedContinuation<Void, Never>? {
            guard closed, leased.isEmpty else { return nil }
            defer { drained = nil }
            return drained
        }
    }

    struct Gauges {
        let inUse: Int
        let idle: Int
        let waiters: Int
    }

    struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Slot, any Error>
        /// When it gives up with ``PostgresError/Kind/poolTimeout`` (the reaper's next look after it).
        let deadline: ContinuousClock.Instant
    }
}
