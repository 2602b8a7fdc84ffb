import CoreMetrics

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
