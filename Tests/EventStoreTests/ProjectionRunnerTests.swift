@testable import EventStore
import Foundation
import Logging
import MetricsTestKit
import Postgres
import TestSupport
import Testing

/// The runner of an async projection, as a service: what it publishes besides the projection's rows.
@Suite struct ProjectionRunnerTests {
    /// The lag is measured on a timer of its own, not after each catch-up: a projection that applies nothing (here,
    /// one that fails every batch, as one with a bug would) still shows how many events wait.
    @Test(.timeLimit(.minutes(1))) func theLagIsMeasuredOnItsOwnTimer() async throws {
        try await ProjectionTests.withStore { pool in
            let metrics = TestMetrics()
            let runner = ProjectionRunner(projection: ProjectionTests.Ledger(failing: true), pool: pool,
                                          wakeUpChannel: nil, pollInterval: .milliseconds(50),
                                          lagInterval: .milliseconds(20), logger: Logger(label: "runner"),
                                          metricsFactory: metrics)
            for stream in ["user-1", "user-2", "user-3"] { try await ProjectionTests.append("a", to: stream, pool: pool) }
            let running = Task { try await runner.run() }
            defer { running.cancel() }
            var lag: Double?
            while lag != 3 {
                try await Task.sleep(for: .milliseconds(20))
                lag = try? metrics.expectGauge("projection_lag_events", [("projection", "ledger")]).lastValue
            }
            #expect(lag == 3)
            let applied = try metrics.expectCounter("projection_events_applied_total", [("projection", "ledger")])
            #expect(applied.totalValue == 0)
        }
    }
}
