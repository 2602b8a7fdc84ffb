import CoreMetrics
import Foundation
import Locking
import Logging
import Tracing
import ServiceLifecycle
import PostgresSession
import PostgresValues

///
/// Sessions open lazily, are leased exclusively, and are checked when they come back: one left inside a
/// transaction, broken, or with unread data on its socket (the server ended it) is closed and replaced on the next
/// lease. While PostgreSQL is down, callers get ``PostgresError/Kind/connectFailed`` quickly and the pool retries
/// with backoff, so the service keeps running and recovers by itself.
///
/// The pool's books are kept under a mutex rather than in an actor: leasing a free session and giving it back are
/// a few instructions each, paid on every statement, where two actor hops cost more than the bookkeeping. Only
/// waiting for a session, connecting and closing suspend, and never while holding the lock.
///
/// Run it as a swift-service-lifecycle service placed before the HTTP server: on graceful shutdown it waits for
/// leased sessions to come back, then closes them all.
public final class DatabasePool: Service, Sendable {
    public let configuration: PoolConfiguration
    public let connectionConfiguration: ConnectionConfiguration
    private let logger: Logger
    private let metrics: PoolMetrics
    /// Whether a tracer was bootstrapped before the pool was made: without one, statements skip span-making entirely.
    private let tracesStatements = !(InstrumentationSystem.tracer is NoOpTracer)
    let state: Locked<State>

    /// What the first look at the free list found.
    private enum Taken {
        /// A free, reusable session, leased already.
        case leased(PostgresConnection, Gauges)
        /// Free capacity that needs a connect (an empty slot, or a session to check again and maybe replace).
        case slot(Slot)
        /// Nothing free: wait in line.
        case nothing
    }

    public init(
        connection: ConnectionConfiguration,
        pool: PoolConfiguration = PoolConfiguration(),
        logger: Logger = Logger(label: "postgres.pool"),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.connectionConfiguration = connection
        self.configuration = pool
        self.logger = logger
        self.metrics = PoolMetrics(factory: metricsFactory, size: pool.size)
        self.state = Locked(State(freeSlots: Array(repeating: .empty, count: pool.size), backoff: pool.initialBackoff))
    }

    // MARK: Leasing

    /// Leases a session for `body`. The session is exclusive to `body` until it returns; cancelling the task cancels
    /// the statement running on the server. `timeout` bounds the whole body (default: ``PoolConfiguration/queryTimeout``).
    /// `body` runs where the caller runs, so each of its statements hops to the session's thread and back;
    /// ``withSession(timeout:_:)`` and ``withTransaction(isolation:timeout:_:)`` run their bodies on that thread.
    public func withConnection<Value: Sendable>(
        timeout: Duration? = nil,
        _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await leasing(timeout: timeout, span: .session, body)
    }

    /// Runs `body` in a transaction on a leased session (see ``PostgresConnection/withTransaction(isolation:_:)``).
    public func withTransaction<Value: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        timeout: Duration? = nil,
        _ body: @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await leasing(timeout: timeout, span: .transaction) { connection in
            try await connection.withTransaction(isolation: isolation, body)
        }
    }

    /// Runs `body` on a leased session (see ``PostgresConnection/perform(_:)``): several statements on one lease,
    /// without a transaction's extra round trips.
    public func withSession<Value: Sendable>(
        timeout: Duration? = nil,
        _ body: @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await leasing(timeout: timeout, span: .session) { connection in try await connection.perform(body) }
    }

    /// Runs one statement on a leased session.
    @discardableResult
    public func query(_ sql: SQL, prepare: Bool = false, timeout: Duration? = nil) async throws -> QueryResult {
        try await leasing(timeout: timeout, span: .statement(sql)) { try await $0.query(sql, prepare: prepare) }
    }

    /// Whether PostgreSQL answers a trivial statement within `timeout`: the readiness probe.
    public func isReady(timeout: Duration = .seconds(2)) async -> Bool {
        do {
            let result = try await query("SELECT 1", timeout: timeout)
            return result.rows.count == 1
        } catch {
            return false
        }
    }

    /// Figures for readiness reports and dashboards.
    public var statistics: PoolStatistics {
        let gauges = state.withLock(\.gauges)
        return PoolStatistics(size: configuration.size, inUse: gauges.inUse, idle: gauges.idle, waiters: gauges.waiters)
    }

    /// Leases a session, runs `body` with it where the caller runs, and gives it back; all of it in a client span when
    /// traces are exported.
    private func leasing<Value: Sendable>(
        timeout: Duration?,
        span: DatabaseSpan,
        _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        guard tracesStatements else { return try await leased(timeout: timeout, body) }
        return try await withSpan(span.name, ofKind: .client) { traced in
            if traced.isRecording { span.describe(in: traced) }
            return try await leased(timeout: timeout, body)
        }
    }

    private func leased<Value: Sendable>(
        timeout: Duration?,
        _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        let waitStart = ContinuousClock.now
        let connection = try await lease(timeout: timeout ?? configuration.queryTimeout)
        let bodyStart = ContinuousClock.now
        metrics.leaseWait.record(waitStart.duration(to: bodyStart))
        do {
            let value = try await withTaskCancellationHandler {
                try await body(connection)
            } onCancel: {
                connection.cancelRunningStatement()
            }
            metrics.leaseDuration.record(bodyStart.duration(to: .now))
            await release(connection)
            return value
        } catch {
            metrics.leaseDuration.record(bodyStart.duration(to: .now))
            await release(connection)  // on every path: `defer` cannot await
            throw error
        }
    }

    private func lease(timeout: Duration?) async throws -> PostgresConnection {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let taken = try state.withLock { state -> Taken in
            guard !state.closed else { throw PostgresError(kind: .poolClosed, message: "the database pool is closed") }
            guard let slot = state.freeSlots.popLast() else { return .nothing }
            // The usual case, settled under this one lock: a free session that is still fine.
            guard case .ready(let connection) = slot, connection.isReusable else { return .slot(slot) }
            admit(connection, deadline: deadline, into: &state)
            return .leased(connection, state.gauges)
        }
        let slot: Slot
        switch taken {
        case .leased(let connection, let gauges):
            record(gauges)
            return connection
        case .slot(let free):
            slot = free
        case .nothing:
            slot = try await waitForSlot()
        }
        let connection: PostgresConnection
        do {
            connection = try await connect(slot)
        } catch {
            hand(.empty)
            throw error
        }
        let gauges = state.withLock { state -> Gauges? in
            guard !state.closed else { return nil }
            admit(connection, deadline: deadline, into: &state)
            return state.gauges
        }
        guard let gauges else {
            await connection.close()
            hand(.empty)
            throw PostgresError(kind: .poolClosed, message: "the database pool is closed")
        }
        record(gauges)
        return connection
    }

    /// Books `connection` as leased until `deadline`; called under the lock.
    private func admit(_ connection: PostgresConnection, deadline: ContinuousClock.Instant?, into state: inout State) {
        connection.beginLease(deadline: deadline)
        state.leased.append(connection)
        if deadline != nil, state.reaper == nil { state.reaper = startReaper() }
    }

    /// A ready, reusable session from `slot`, or a new one.
    private func connect(_ slot: Slot) async throws -> PostgresConnection {
        if case .ready(let connection) = slot {
            if connection.isReusable { return connection }
            await connection.close()
        }
        let backingOff = state.withLock { state in state.retryAfter.map { ContinuousClock.now < $0 } ?? false }
        if backingOff {
            throw PostgresError(kind: .connectFailed, message: "PostgreSQL is unreachable; retrying shortly")
        }
        do {
            let connection = try await PostgresConnection(configuration: connectionConfiguration)
            let recovered = state.withLock { state in
                defer {
                    state.retryAfter = nil
                    state.backoff = configuration.initialBackoff
                }
                return state.retryAfter != nil
            }
            if recovered { logger.info("database reachable again") }
            return connection
        } catch {
            let retryIn = state.withLock { state in
                let backoff = state.backoff
                state.retryAfter = .now + backoff
                state.backoff = min(backoff * 2, configuration.maxBackoff)
                return backoff
            }
            logger.warning("cannot connect to the database", metadata: [
                "error": "\(error)", "retry_in_ms": "\(ConnectionConfiguration.milliseconds(retryIn))",
            ])
            throw error
        }
    }

    private func waitForSlot() async throws -> Slot {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        // No timer per waiter: the pool's reaper fails the waiters past their deadline (a timer task per waiter cost
        // a task, a dispatch timer and its cancellation on every request that found the pool busy).
        let deadline = ContinuousClock.now + configuration.leaseTimeout
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // A session freed since `lease` found none is taken at once; otherwise wait in line.
                let outcome = state.withLock { state -> Result<Slot, any Error>? in
                    if state.closed {
                        return .failure(PostgresError(kind: .poolClosed, message: "the database pool is closed"))
                    }
                    if let free = state.freeSlots.popLast() { return .success(free) }
                    // Cancelled before getting in line: the cancellation handler already ran and found no waiter.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append(Waiter(id: id, continuation: continuation, deadline: deadline))
                    if state.reaper == nil { state.reaper = startReaper() }
                    return nil
                }
                if let outcome {
                    continuation.resume(with: outcome)
                } else {
                    publishGauges()
                }
            }
        } onCancel: {
            failWaiter(id, CancellationError())
        }
    }

    private func failWaiter(_ id: Int, _ error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        guard let waiter else { return }
        publishGauges()
        waiter.continuation.resume(throwing: error)
    }

    private func release(_ connection: PostgresConnection) async {
        switch connection.endLease() {
        case .reusable:
            await giveBack(connection, reusable: true)
        case .unusable:
            await giveBack(connection, reusable: false)
        case .cancelInFlight:
            // The caller goes on at once. The session stays booked as leased until its cancel has reached the server
            // (a late one would stop the next lease's statement); if that takes too long, it is replaced.
            Task { await giveBack(connection, reusable: await connection.cancelDelivered(within: .seconds(1))) }
        }
    }

    private func giveBack(_ connection: PostgresConnection, reusable: Bool) async {
        // Removed from the books and handed on under one lock: a close() in between would miss the session.
        let (kept, handed, drained, gauges) = state.withLock { state in
            state.removeLeased(connection)
            let kept = reusable && !state.closed
            let handed = kept ? state.hand(.ready(connection)) : nil
            return (kept, handed, state.takeDrained(), state.gauges)
        }
        resume(handed)
        drained?.resume()
        if kept {
            record(gauges)
        } else {
            await connection.close()
            hand(.empty)
        }
    }

    private func hand(_ slot: Slot) {
        let (handed, gauges) = state.withLock { ($0.hand(slot), $0.gauges) }
        resume(handed)
        record(gauges)
    }

    private func resume(_ handed: (Waiter, Slot)?) {
        guard let (waiter, slot) = handed else { return }
        waiter.continuation.resume(returning: slot)
    }

    /// Cancels statements of leases past their deadline and fails waiters past theirs. One task per pool, not one
    /// timer per lease or waiter; it looks as often as the lease timeout asks, at most every 50 ms.
    private func startReaper() -> Task<Void, Never> {
        let interval = min(.milliseconds(50), configuration.leaseTimeout)
        return Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                self?.expireOverdue()
            }
        }
    }

    private func expireOverdue() {
        let now = ContinuousClock.now
        let (leased, overdue) = state.withLock { state in
            let overdue = state.waiters.filter { $0.deadline <= now }
            if !overdue.isEmpty { state.waiters.removeAll { $0.deadline <= now } }
            return (state.leased, overdue)
        }
        for connection in leased { connection.expireLeaseIfOverdue(now: now) }
        guard !overdue.isEmpty else { return }
        publishGauges()
        let timeout = configuration.leaseTimeout
        for waiter in overdue {
            waiter.continuation.resume(throwing: PostgresError(
                kind: .poolTimeout, message: "database busy: no connection became free within \(timeout)"))
        }
    }

    func publishGauges() {
        record(state.withLock(\.gauges))
    }

    private func record(_ gauges: Gauges) {
        metrics.inUse.record(gauges.inUse)
        metrics.idle.record(gauges.idle)
        metrics.waiters.record(gauges.waiters)
    }
}
