import CLibpq
import Foundation
import Locking

/// What the pool and cancellation do from other threads: the reusability check, cancels, a lease's deadline.
extension PostgresConnection {
    /// Whether the pool may hand this session out again: open, not inside a transaction, not running a statement, and
    /// nothing unread on its socket (a session the server ended has an EOF or a termination message waiting).
    /// Callable from any thread without a hop.
    public nonisolated var isReusable: Bool {
        shared.withLock { state in
            guard state.idle, !state.running, !state.closed, !state.cancelInFlight else { return false }
            var descriptor = pollfd(fd: state.socket, events: Int16(POLLIN), revents: 0)
            return poll(&descriptor, 1, 0) == 0
        }
    }

    /// Asks the server to cancel the statement running now, if any. Any thread; returns at once.
    /// The statement then fails with SQLSTATE 57014 and the session stays usable.
    ///
    /// `PQcancel` opens a connection of its own and waits until the server has acted, which takes a round trip, or
    /// minutes when the server cannot be reached. So it runs on a thread started for it: never on the caller's (a
    /// task's cancellation handler, the pool's reaper), and never under the session's lock. Until it is done, the
    /// session is not handed out again (``endLease()``, ``isReusable``): a cancel that reached the server late would
    /// otherwise stop the next lease's statement.
    public nonisolated func cancelRunningStatement() {
        send(shared.withLock { $0.claimCancel() })
    }

    /// Sends a claimed cancel request (see ``SharedState/claimCancel()``) from a thread of its own.
    private nonisolated func send(_ request: CancelRequest?) {
        guard let request else { return }
        Self.runOnThreadOfItsOwn(named: "pg-cancel") { [shared] in
            request.send()
            shared.withLock { $0.cancelInFlight = false }
        }
    }

    /// Starts a lease that must end by `deadline`; whatever an earlier lease's deadline did no longer applies.
    package nonisolated func beginLease(deadline: ContinuousClock.Instant?) {
        shared.withLock { state in
            state.timedOut = false
            state.leaseDeadline = deadline
        }
    }

    /// How a lease left the session.
    package enum LeaseEnd {
        /// It ended its last statement cleanly, outside a transaction.
        case reusable
        /// As `reusable`, but a cancel request is still on its way to the server.
        case cancelInFlight
        /// Closed, broken, inside a transaction or amid a statement.
        case unusable
    }

    /// Ends the lease. No system call: this is checked on release, while ``isReusable`` (which looks at the socket)
    /// is checked on lease.
    package nonisolated func endLease() -> LeaseEnd {
        shared.withLock { state in
            state.leaseDeadline = nil
            guard state.idle, !state.running, !state.closed else { return .unusable }
            return state.cancelInFlight ? .cancelInFlight : .reusable
        }
    }

    /// Waits, up to `limit`, until the cancel request on its way has reached the server (usually well under a
    /// millisecond after the cancelled statement's error), and tells whether it did.
    package nonisolated func cancelDelivered(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while shared.withLock(\.cancelInFlight) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// If the lease is past its deadline, marks it out of time: the running statement is cancelled and every later
    /// statement of the lease fails with ``PostgresError/Kind/timeout``. The pool calls this every few milliseconds
    /// while the lease lasts, so a cancel that reached the server before its statement is sent again.
    package nonisolated func expireLeaseIfOverdue(now: ContinuousClock.Instant) {
        // One locked step: with two, the lease could end and the next begin a statement in between, which the cancel
        // would then stop.
        send(shared.withLock { state -> CancelRequest? in
            guard let deadline = state.leaseDeadline, deadline < now else { return nil }
            state.timedOut = true
            return state.claimCancel()
        })
    }
}

/// What other threads may touch, guarded by a mutex.
struct SharedState: Sendable {
    var cancel: CancelRequest?
    /// A ``CancelRequest/send()`` has started and not returned yet.
    var cancelInFlight = false
    var socket: Int32 = -1
    var idle = false
    var running = false
    var closed = false
    var timedOut = false
    var leaseDeadline: ContinuousClock.Instant?

    /// The cancel request to send for the statement running now, marked as on its way; nil when no statement runs or
    /// a cancel is already on its way.
    mutating func claimCancel() -> CancelRequest? {
        guard running, !cancelInFlight, let cancel else { return nil }
        cancelInFlight = true
        return cancel
    }
}

/// libpq's cancel handle for one session (`PGcancel`), freed when neither the session nor a cancel on its way needs it.
///
/// `@unchecked Sendable`: libpq never changes a `PGcancel` after making it, and documents `PQcancel` as safe to call
/// from any thread (even a signal handler).
final class CancelRequest: @unchecked Sendable {
    private let handle: OpaquePointer

    init?(_ connection: OpaquePointer) {
        guard let handle = PQgetCancel(connection) else { return nil }
        self.handle = handle
    }

    deinit { PQfreeCancel(handle) }

    /// Asks the server to cancel the session's running statement, and waits until it has acted. Blocks.
    func send() {
        var error = [CChar](repeating: 0, count: 256)
        _ = PQcancel(handle, &error, Int32(error.count))
    }
}
