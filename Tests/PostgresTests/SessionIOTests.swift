import Foundation
import Postgres
import TestSupport
import Testing

/// Sessions wait for the server without holding a thread (libpq runs non-blocking, woken by the reactor).
@Suite struct SessionIOTests {
    /// More slow statements than the cooperative pool has threads, and other statements still complete meanwhile.
    /// With a thread blocked per waiting session, the quick statements would never run and the time limit would end
    /// the test.
    @Test(.timeLimit(.minutes(1)))
    func slowStatementsLeaveTheThreadsFree() async throws {
        let sleepers = ProcessInfo.processInfo.activeProcessorCount + 2
        try await withTestPool(size: sleepers + 1) { pool, _ in
            let sleeping: SQL = """
                SELECT count(*) FROM pg_stat_activity
                 WHERE query LIKE '%io-test-sleeper%' AND state = 'active' AND pid <> pg_backend_pid()
                """
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<sleepers {
                    group.addTask { try await pool.query("SELECT pg_sleep(30) /* io-test-sleeper */") }
                }
                var running = 0
                for _ in 0..<200 where running < sleepers {
                    running = try await pool.query(sleeping).single().decode(Int.self, at: 0)
                    if running < sleepers { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(running == sleepers)

                for value in 1...20 {
                    #expect(try await pool.query("SELECT \(value)::int").single().decode(Int.self, at: 0) == value)
                }
                // The sleepers are still waiting on the server: the quick statements did not wait for them.
                #expect(try await pool.query(sleeping).single().decode(Int.self, at: 0) == sleepers)

                group.cancelAll()  // cancels the sleepers' statements on the server
                while let outcome = await group.nextResult() {
                    #expect(throws: (any Error).self) { try outcome.get() }
                }
            }
            #expect(try await pool.query(sleeping).single().decode(Int.self, at: 0) == 0)
        }
    }
}
