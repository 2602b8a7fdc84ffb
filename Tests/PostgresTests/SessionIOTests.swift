import Foundation
import Postgres
import TestSupport
import Testing

/// Sessions wait for the server on their own threads, never on the cooperative pool's.
@Suite struct SessionIOTests {
    /// More slow statements than the cooperative pool has threads, and other statements still complete meanwhile.
    /// With a cooperative thread blocked per waiting session, the quick statements would never run and the time limit
    /// would end the test.
    @Test(.timeLimit(.minutes(1)))
    func slowStatementsLeaveTheThreadsFree() async throws {
        let sleepers = ProcessInfo.processInfo.activeProcessorCount + 2
        try await withTestPool(size: sleepers + 1) { pool, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<sleepers {
                    group.addTask { try await pool.query("SELECT pg_sleep(30) /* io-test-sleeper */") }
                }
                let running = try await Self.waitForSleepers(sleepers) {
                    try await Self.sleepers(tagged: "io-test-sleeper", in: pool)
                }
                #expect(running == sleepers)

                for value in 1...20 {
                    #expect(try await pool.query("SELECT \(value)::int").scalar(Int.self) == value)
                }
                // The sleepers are still waiting on the server: the quick statements did not wait for them.
                #expect(try await Self.sleepers(tagged: "io-test-sleeper", in: pool) == sleepers)

                group.cancelAll()  // cancels the sleepers' statements on the server
                while let outcome = await group.nextResult() {
                    #expect(throws: (any Error).self) { try outcome.get() }
                }
            }
            #expect(try await Self.sleepers(tagged: "io-test-sleeper", in: pool) == 0)
        }
    }

    /// A transaction's or a session's body runs on the session's own thread (it is isolated to the session), so its
    /// round trips cost no hand-off between threads; the caller's own code runs where the caller runs.
    @Test func aLeaseBodyRunsOnTheSessionsThread() async throws {
        try await withTestPool(size: 2) { pool, _ in
            for lease in [Lease.transaction, .session] {
                let (names, threads) = try await lease.run(on: pool) { connection in
                    var names = [currentThreadName()]
                    var threads: Set<pthread_t> = [pthread_self()]
                    for value in 1...3 {
                        let answer = try await connection.query("SELECT \(value)::int").scalar(Int.self)
                        #expect(answer == value)
                        names.append(currentThreadName())
                        threads.insert(pthread_self())
                    }
                    return (names, threads)
                }
                #expect(names == Array(repeating: PostgresConnection.threadName, count: 4))
                #expect(threads.count == 1)
                #expect(currentThreadName() != PostgresConnection.threadName)
            }
        }
    }

    private enum Lease {
        case transaction, session

        func run<Value: Sendable>(
            on pool: DatabasePool, _ body: @Sendable (isolated PostgresConnection) async throws -> Value
        ) async throws -> Value {
            switch self {
            case .transaction: try await pool.withTransaction(body)
            case .session: try await pool.withSession(body)
            }
        }
    }

    /// Statements running on the server whose text contains `tag`, other than the one asking.
    private static func sleepers(tagged tag: String, in pool: DatabasePool) async throws -> Int {
        try await pool.query("""
            SELECT count(*) FROM pg_stat_activity
             WHERE query LIKE \("%" + tag + "%") AND state = 'active' AND pid <> pg_backend_pid()
            """).scalar(Int.self)
    }

    /// Polls `running` (for up to about ten seconds) until it reaches `count`; returns what it gave last.
    private static func waitForSleepers(_ count: Int, running: () async throws -> Int) async throws -> Int {
        var last = 0
        for _ in 0..<200 where last < count {
            last = try await running()
            if last < count { try await Task.sleep(for: .milliseconds(50)) }
        }
        return last
    }
}
