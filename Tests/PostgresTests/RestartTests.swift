import Foundation
import Postgres
import TestSupport
import Testing

/// PostgreSQL stopped and started again under load: clean errors meanwhile, recovery without restarting anything.
@Suite struct RestartTests {
    @Test func poolRecoversAfterTheServerRestartsUnderLoad() async throws {
        let cluster = try TestCluster.create()
        let pool = DatabasePool(
            connection: ConnectionConfiguration(connectionString: cluster.connectionString, applicationName: "restart"),
            pool: PoolConfiguration(size: 4, leaseTimeout: .seconds(2), queryTimeout: .seconds(5),
                                    maxBackoff: .milliseconds(200))
        )
        try await pool.query("CREATE TABLE writes (id bigserial PRIMARY KEY, n int)")

        let outcomes = OutcomeCounter()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var n = 0
                        while !Task.isCancelled {
                            n += 1
                            do {
                                try await pool.query("INSERT INTO writes (n) VALUES (\(worker * 1_000_000 + n))")
                                await outcomes.succeeded()
                            } catch is CancellationError {
                                break  // the load is being stopped
                            } catch let error as PostgresError where Task.isCancelled && error.isQueryCancelled {
                                break  // stopping the load cancelled this statement on the server
                            } catch let error as PostgresError {
                                await outcomes.failed(error, unavailable: error.isUnavailable || error.isConnectionLost)
                                try? await Task.sleep(for: .milliseconds(20))
                            } catch {
                                await outcomes.failed(error, unavailable: false)
                            }
                        }
                    }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        try cluster.stop(mode: "fast")
        try await Task.sleep(for: .milliseconds(500))
        #expect(await pool.isReady(timeout: .seconds(1)) == false)
        try cluster.start()
        // Recovery needs no restart of the pool: writes succeed again (within seconds; the limit is for a busy machine).
        let before = await outcomes.successes
        try await waitUntil(limit: .seconds(30)) { await outcomes.successes > before + 20 }
        load.cancel()
        await load.value

        let (successes, failures, unexpected) = await outcomes.totals
        #expect(successes > 0)
        #expect(failures > 0)  // the outage was real
        #expect(unexpected.isEmpty, "unexpected errors: \(unexpected)")  // every failure a clean "unavailable"
        #expect(await pool.isReady())
        // No session is stuck in a transaction, and every acknowledged write is there.
        let stuck = try await pool.query("""
            SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'
            """).scalar(Int.self)
        #expect(stuck == 0)
        let stored = try await pool.query("SELECT count(*) FROM writes").scalar(Int.self)
        #expect(stored >= successes)
        await pool.close()
        try cluster.stop()
    }
}

actor OutcomeCounter {
    private(set) var successes = 0
    private var failures = 0
    private var unexpected: [String] = []

    func succeeded() { successes += 1 }
    func failed(_ error: any Error, unavailable: Bool) {
        failures += 1
        if !unavailable { unexpected.append(String(describing: error)) }
    }
    var totals: (Int, Int, [String]) { (successes, failures, unexpected) }
}
