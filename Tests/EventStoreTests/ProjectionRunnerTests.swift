@testable import EventStore
import Foundation
import Logging
import MetricsTestKit
import Postgres
import TestSupport
import Testing

/// The runner of an async projection, as a service: what it publishes besides the projection's rows.
@Suite struct ProjectionRunnerTests {
    /// The lag is measured on a timer of its own: events appended while nothing wakes the projection (no
    /// notification, the next poll a minute away) show in `projection_lag_events` all the same.
    @Test(.timeLimit(.minutes(1))) func theLagIsMeasuredOnItsOwnTimer() async throws {
        try await ProjectionTests.withStore { pool in
            let metrics = TestMetrics()
            let runner = ProjectionRunner(projection: ProjectionTests.Ledger(), pool: pool, wakeUpChannel: nil,
                                          pollInterval: .seconds(60), lagInterval: .milliseconds(20),
                                          logger: Logger(label: "runner"), metricsFactory: metrics)
            for stream in ["user-1", "user-2"] { try await ProjectionTests.append("a", to: stream, pool: pool) }
            let running = Task { try await runner.run() }
            defer { running.cancel() }
            // The first poll, at start, applies what the log holds.
            let applied = try metrics.expectCounter("projection_events_applied_total", [("projection", "ledger")])
            while applied.totalValue < 2 { try await Task.sleep(for: .milliseconds(20)) }
            for stream in ["user-1", "user-2", "user-3"] { try await ProjectionTests.append("b", to: stream, pool: pool) }
            var lag: Int64?
            while lag != 3 {
                try await Task.sleep(for: .milliseconds(20))
                lag = try metrics.expectGauge("projection_lag_events", [("projection", "ledger")]).lastValue
                    .map { Int64($0) }
            }
            #expect(lag == 3)
            #expect(applied.totalValue == 2)  // nothing woke the projection: the lag was measured without it
        }
    }
}
