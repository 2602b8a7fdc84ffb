import CoreMetrics
import Foundation
import Logging
import ServiceLifecycle

/// Sizing and patience of a ``DatabasePool``.
public struct PoolConfiguration: Sendable {
    /// Sessions at most.
    public var size: Int
    /// How long a caller waits for a free session before getting the "database busy" error.
    public var leaseTimeout: Duration
    /// Default bound on one lease (all statements of one `withConnection` body); `nil` leaves only the server's
    /// `statement_timeout`.
    public var queryTimeout: Duration?
    /// Wait after a failed connect before trying again, doubling up to ``maxBackoff``. Meanwhile leases that need a
    /// new session fail at once instead of piling up.
    public var initialBackoff: Duration
    public var maxBackoff: Duration

    public init(
        size: Int = 8,
        leaseTimeout: Duration = .seconds(5),
        queryTimeout: Duration? = .seconds(15),
        initialBackoff: Duration = .milliseconds(100),
        maxBackoff: Duration = .seconds(2)
    ) {
        self.size = max(1, size)
        self.leaseTimeout = leaseTimeout
        self.queryTimeout = queryTimeout
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
    }
}

/// A bounded pool of ``PostgresConnection``s.
///
/// Sessions open lazily, are leased exclusively, and are checked when they come back: one left inside a
/// transaction, broken, or with unread data on its socket (the server ended it) is closed and replaced on the next
/// lease. While PostgreSQL is down, callers get ``PostgresError/Kind/connectFailed`` quickly and the pool retries
/// with backoff, so the service keeps running and recovers by itself.
///
/// Run it as a swift-service-lifecycle service placed before the HTTP server: on graceful shutdown it waits for
/// leased sessions to come back, then closes them all.
public actor DatabasePool: Service {
    public nonisolated let configuration: PoolConfiguration
    public nonisolated let connectionConfiguration: ConnectionConfiguration
    private let logger: Logger
    private let metrics: PoolMetrics

    /// Free capacity: a ready session, or room for one.
    fileprivate enum Slot: Sendable {
        case ready(PostgresConnection)
        case empty
    }

    private var freeSlots: [Slot]
    private var leased: [ObjectIdentifier: Lease] = [:]
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0
    private var closed = false
    private var drained: CheckedContinuation<Void, Never>?
    private var backoff: Duration
    private var retryAfter: ContinuousClock.Instant?
    private var reaper: Task<Void, Never>?

    private struct Lease {
        let connection: PostgresConnection
        let deadline: ContinuousClock.Instant?
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Slot, any Error>
        let timer: Task<Void, Never>
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
        self.freeSlots = Array(repeating: .empty, count: pool.size)
        self.backoff = pool.initialBackoff
    }

    // MARK: Leasing

    /// Leases a session for `body`. The session is exclusive to `body` until it returns; cancelling the task cancels
    /// the statement running on the server. `timeout` bounds the whole body (default: ``PoolConfiguration/queryTimeout``).
    public nonisolated func withConnection<Value: Sendable>(
        timeout: Duration? = nil,
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

    /// Runs `body` in a transaction on a leased session (see ``PostgresConnection/withTransaction(isolation:_:)``).
    public nonisolated func withTransaction<Value: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        timeout: Duration? = nil,
        _ body: @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await withConnection(timeout: timeout) { connection in
            try await connection.withTransaction(isolation: isolation, body)
        }
    }

    /// Runs `body` on a leased session (see ``PostgresConnection/perform(_:)``): several statements on one lease,
    /// without a transaction's extra round trips.
    public nonisolated func withSession<Value: Sendable>(
        timeout: Duration? = nil,
        _ body: @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await withConnection(timeout: timeout) { connection in try await connection.perform(body) }
    }

    /// Runs one statement on a leased session.
    @discardableResult
    public nonisolated func query(_ sql: SQL, prepare: Bool = false, timeout: Duration? = nil) async throws -> QueryResult {
        try await withConnection(timeout: timeout) { try await $0.query(sql, prepare: prepare) }
    }

    /// Whether PostgreSQL answers a trivial statement within `timeout`: the readiness probe.
    public nonisolated func isReady(timeout: Duration = .seconds(2)) async -> Bool {
        do {
            let result = try await withConnection(timeout: timeout) { try await $0.query("SELECT 1") }
            return result.rows.count == 1
        } catch {
            return false
        }
    }

    /// Figures for readiness reports and dashboards.
    public var statistics: PoolStatistics {
        let idle = freeSlots.reduce(0) { count, slot in if case .ready = slot { count + 1 } else { count } }
        return PoolStatistics(size: configuration.size, inUse: leased.count, idle: idle, waiters: waiters.count)
    }

    private func lease(timeout: Duration?) async throws -> PostgresConnection {
        guard !closed else { throw PostgresError(kind: .poolClosed, message: "the database pool is closed") }
        let slot: Slot
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = try await waitForSlot()
        }
        let connection: PostgresConnection
        do {
            connection = try await connect(slot)
        } catch {
            hand(.empty)
            throw error
        }
        guard !closed else {
            await connection.close()
            hand(.empty)
            throw PostgresError(kind: .poolClosed, message: "the database pool is closed")
        }
        connection.beginLease()
        leased[ObjectIdentifier(connection)] = Lease(connection: connection, deadline: timeout.map { .now + $0 })
        if timeout != nil, reaper == nil { startReaper() }
        publishGauges()
        return connection
    }

    /// A ready, reusable session from `slot`, or a new one.
    private func connect(_ slot: Slot) async throws -> PostgresConnection {
        if case .ready(let connection) = slot {
            if connection.isReusable { return connection }
            await connection.close()
        }
        if let retryAfter, ContinuousClock.now < retryAfter {
            throw PostgresError(kind: .connectFailed, message: "PostgreSQL is unreachable; retrying shortly")
        }
        do {
            let connection = try await PostgresConnection(configuration: connectionConfiguration)
            if self.retryAfter != nil { logger.info("database reachable again") }
            retryAfter = nil
            backoff = configuration.initialBackoff
            return connection
        } catch {
            retryAfter = .now + backoff
            logger.warning("cannot connect to the database", metadata: [
                "error": "\(error)", "retry_in_ms": "\(ConnectionConfiguration.milliseconds(backoff))",
            ])
            backoff = min(backoff * 2, configuration.maxBackoff)
            throw error
        }
    }

    private func waitForSlot() async throws -> Slot {
        nextWaiterID += 1
        let id = nextWaiterID
        let leaseTimeout = configuration.leaseTimeout
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let timer = Task { [weak self] in
                    guard (try? await Task.sleep(for: leaseTimeout)) != nil else { return }
                    await self?.failWaiter(id, PostgresError(
                        kind: .poolTimeout,
                        message: "database busy: no connection became free within \(leaseTimeout)"
                    ))
                }
                waiters.append(Waiter(id: id, continuation: continuation, timer: timer))
                metrics.waiters.record(waiters.count)
            }
        } onCancel: {
            Task { await self.failWaiter(id, CancellationError()) }
        }
    }

    private func failWaiter(_ id: Int, _ error: any Error) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.timer.cancel()
        metrics.waiters.record(waiters.count)
        waiter.continuation.resume(throwing: error)
    }

    private func release(_ connection: PostgresConnection) async {
        leased[ObjectIdentifier(connection)] = nil
        if !closed, connection.isIdle {
            hand(.ready(connection))
        } else {
            await connection.close()
            hand(.empty)
        }
        publishGauges()
        if closed, leased.isEmpty {
            drained?.resume()
            drained = nil
        }
    }

    /// Gives freed capacity to the longest waiter, or back to the free list.
    private func hand(_ slot: Slot) {
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            waiter.timer.cancel()
            metrics.waiters.record(waiters.count)
            waiter.continuation.resume(returning: slot)
        } else {
            freeSlots.append(slot)
        }
    }

    /// Cancels statements of leases past their deadline. One task per pool, not one timer per lease.
    private func startReaper() {
        reaper = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                await self?.expireOverdueLeases()
            }
        }
    }

    private func expireOverdueLeases() {
        let now = ContinuousClock.now
        for lease in leased.values {
            if let deadline = lease.deadline, deadline < now { lease.connection.expireLease() }
        }
    }

    private func publishGauges() {
        metrics.inUse.record(leased.count)
        metrics.idle.record(freeSlots.reduce(0) { count, slot in if case .ready = slot { count + 1 } else { count } })
    }

    // MARK: Lifecycle

    /// Parks until graceful shutdown (the HTTP server, later in the service group, has drained by then), then closes.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Runs `body` with this pool, then closes the pool, whether `body` returned or threw: for a pool that lives
    /// only as long as one task (a command-line job, a test).
    public nonisolated func closing<Value: Sendable>(after body: (DatabasePool) async throws -> Value) async throws
        -> Value
    {
        do {
            let value = try await body(self)
            await close()
            return value
        } catch {
            await close()  // on every path: `defer` cannot await
            throw error
        }
    }

    /// Refuses new leases, fails waiters, waits for leased sessions to come back, closes everything. Idempotent.
    public func close() async {
        guard !closed else { return }
        closed = true
        reaper?.cancel()
        reaper = nil
        for waiter in waiters {
            waiter.timer.cancel()
            waiter.continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the database pool is closed"))
        }
        waiters = []
        if !leased.isEmpty { await withCheckedContinuation { drained = $0 } }
        for case .ready(let connection) in freeSlots { await connection.close() }
        freeSlots = []
        publishGauges()
    }
}

/// A snapshot of a pool's occupancy.
public struct PoolStatistics: Sendable, Equatable, Codable {
    public let size: Int
    public let inUse: Int
    public let idle: Int
    public let waiters: Int
}

/// The pool's figures, exported through swift-metrics.
struct PoolMetrics: Sendable {
    let inUse: Gauge
    let idle: Gauge
    let waiters: Gauge
    let leaseWait: CoreMetrics.Timer
    let leaseDuration: CoreMetrics.Timer

    init(factory: any MetricsFactory, size: Int) {
        inUse = Gauge(label: "db_pool_connections_in_use", factory: factory)
        idle = Gauge(label: "db_pool_connections_idle", factory: factory)
        waiters = Gauge(label: "db_pool_waiters", factory: factory)
        leaseWait = CoreMetrics.Timer(label: "db_pool_lease_wait_seconds", factory: factory)
        leaseDuration = CoreMetrics.Timer(label: "db_lease_duration_seconds", factory: factory)
        Gauge(label: "db_pool_size", factory: factory).record(size)
    }
}

extension CoreMetrics.Timer {
    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
