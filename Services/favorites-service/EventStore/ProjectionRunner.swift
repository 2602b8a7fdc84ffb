import Foundation
import Logging
import CoreMetrics
import Postgres
import ServiceLifecycle

/// Keeps an async projection up to date, as a lifecycle service. Every replica runs one; a batch runs under the
/// projection's advisory lock, so one instance applies at a time across all replicas, and the checkpoint moves in the
/// same transaction as the rows. A replica that dies mid-batch leaves nothing behind (its transaction rolls back)
/// and the next instance carries on from the checkpoint.
///
/// The poll is the source of truth; a notification on `channel` (see ``EventNotifier``) only wakes it early, and at
/// most once per `wakeUpInterval`: the notifications that come meanwhile (every replica's writers send them) are one
/// wake-up, so a busy log costs the projection a batch per interval, not a catch-up per notification. The lag is
/// measured on a timer of its own (`lagInterval`), never on the write path's wake-ups.
public struct ProjectionRunner<Projected: Projection>: Service {
    let projection: Projected
    let pool: DatabasePool
    let channel: String?
    let pollInterval: Duration
    let wakeUpInterval: Duration
    let lagInterval: Duration
    let batchSize: Int
    let logger: Logger
    let metrics: ProjectionMetrics

    public init(projection: Projected, pool: DatabasePool, wakeUpChannel channel: String?, pollInterval: Duration,
                wakeUpInterval: Duration = .milliseconds(100), lagInterval: Duration = .seconds(5),
                batchSize: Int = 500, logger: Logger, metricsFactory: any MetricsFactory) {
        self.projection = projection
        self.pool = pool
        self.channel = channel
        self.pollInterval = pollInterval
        self.wakeUpInterval = wakeUpInterval
        self.lagInterval = lagInterval
        self.batchSize = batchSize
        self.logger = logger
        self.metrics = ProjectionMetrics(projection: projection.name, factory: metricsFactory)
    }

    public func run() async throws {
        let (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while !Task.isCancelled {
                        wake.yield()
                        try? await Task.sleep(for: pollInterval)
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await publishLag()  // a failure shows as the runner's own warning
                        try? await Task.sleep(for: lagInterval)
                    }
                }
                if let channel {
                    let listener = PostgresListener(configuration: pool.connectionConfiguration, channels: [channel],
                                                    logger: logger)
                    group.addTask {
                        for await _ in listener.events() { wake.yield() }
                    }
                }
                var failing = false
                for await _ in wakeUps {
                    do {
                        try await catchUp()
                        if failing { logger.notice("projection running again", metadata: ["projection": "\(projection.name)"]) }
                        failing = false
                    } catch {
                        guard !Task.isCancelled else { break }
                        if !failing {  // once per outage, not once per poll
                            logger.warning("projection cannot run; retrying", metadata: [
                                "projection": "\(projection.name)", "error": "\(error)",
                            ])
                        }
                        failing = true
                    }
                    try? await Task.sleep(for: wakeUpInterval)  // what wakes it meanwhile is one wake-up
                }
                group.cancelAll()
            }
        }
    }

    /// Applies batches until the log holds nothing more it may read.
    func catchUp() async throws {
        while !Task.isCancelled {
            let outcome = try await ProjectionBatch.run(projection, limit: batchSize, pool: pool)
            guard case .applied(let count) = outcome else { break }
            metrics.applied.increment(by: count)
            if count < batchSize { break }
        }
    }

    /// Publishes how many events wait for the projection, and for how long the oldest has.
    func publishLag() async throws {
        let lag = try await ProjectionBatch.lag(of: projection.name, pool: pool)
        metrics.lagEvents.record(lag.events)
        metrics.lagSeconds.record(lag.oldest.map { max(0, Date().timeIntervalSince($0)) } ?? 0)
    }
}

/// A projection's figures: `projection_lag_events` and `projection_lag_seconds` (how many events wait, and for how
/// long the oldest has), and `projection_events_applied_total`.
struct ProjectionMetrics: Sendable {
    let lagEvents: Gauge
    let lagSeconds: Gauge
    let applied: Counter

    init(projection: String, factory: any MetricsFactory) {
        let dimensions = [("projection", projection)]
        lagEvents = Gauge(label: "projection_lag_events", dimensions: dimensions, factory: factory)
        lagSeconds = Gauge(label: "projection_lag_seconds", dimensions: dimensions, factory: factory)
        applied = Counter(label: "projection_events_applied_total", dimensions: dimensions, factory: factory)
    }
}
