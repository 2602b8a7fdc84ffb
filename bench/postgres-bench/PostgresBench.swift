import ArgumentParser
import Foundation
import Postgres

/// Drives the Postgres module the way a service does (one pool, `concurrency` tasks each leasing a session per
/// statement) and prints transactions per second, for bench/postgres.sh to set against pgbench.
@main
struct PostgresBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres-bench",
        abstract: "Prepared point reads or single-row inserts through the Postgres module, as fast as possible."
    )

    enum Workload: String, ExpressibleByArgument, CaseIterable {
        case read, insert

        /// The statement `worker` runs next: reads draw an id from 1…`rows`.
        func statement(_ worker: Int, _ rows: Int, _ generator: inout SplitMix64) -> SQL {
            switch self {
            case .read:
                "SELECT id, title, price FROM bench_items WHERE id = \(Int.random(in: 1...rows, using: &generator))"
            case .insert:
                "INSERT INTO bench_writes (worker, title) VALUES (\(worker), \("favorite"))"
            }
        }
    }

    @Option(help: "libpq connection string of the benchmark database.") var url: String
    @Option(help: "read (prepared point SELECT) or insert (single-row INSERT).") var workload: Workload
    @Option(help: "Concurrent tasks; the pool has as many sessions.") var concurrency = 8
    @Option(help: "Seconds to run, after a one-second warm-up.") var seconds = 10
    @Option(help: "Rows in bench_items (ids 1…rows) for the read workload.") var rows = 100_000
    @Flag(help: "Each task keeps one session for the whole run (a withSession body) instead of leasing one per statement.")
    var hold = false

    func run() async throws {
        let pool = DatabasePool(
            connection: ConnectionConfiguration(connectionString: url, applicationName: "postgres-bench"),
            pool: PoolConfiguration(size: concurrency, leaseTimeout: .seconds(30))
        )
        _ = try await drive(pool, for: .seconds(1))  // warm-up: sessions open, statements prepared
        let started = ContinuousClock.now
        let completed = try await drive(pool, for: .seconds(seconds))
        let elapsed = started.duration(to: .now)
        let (wholeSeconds, attoseconds) = elapsed.components
        let tps = Double(completed) / (Double(wholeSeconds) + Double(attoseconds) / 1e18)
        print("workload=\(workload.rawValue) concurrency=\(concurrency) transactions=\(completed) tps=\(Int(tps))")
        await pool.close()
    }

    /// Runs the workload on `concurrency` tasks until `duration` has passed; returns the statements completed.
    func drive(_ pool: DatabasePool, for duration: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + duration
        let workload = self.workload
        let rows = self.rows
        return try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    if hold {
                        // As a service's transaction body runs: isolated to the session, on its thread.
                        return try await pool.withSession(timeout: .seconds(3600)) { connection in
                            var generator = SplitMix64(seed: UInt64(worker))
                            var count = 0
                            while ContinuousClock.now < deadline {
                                try await connection.query(workload.statement(worker, rows, &generator), prepare: true)
                                count += 1
                            }
                            return count
                        }
                    }
                    var generator = SplitMix64(seed: UInt64(worker))
                    var count = 0
                    while ContinuousClock.now < deadline {
                        try await pool.query(workload.statement(worker, rows, &generator), prepare: true)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
    }
}

/// A cheap, seeded generator: pgbench draws its ids from its own PRNG, so the Swift side should not pay a
/// `getrandom` system call per statement (SystemRandomNumberGenerator) that pgbench does not.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
