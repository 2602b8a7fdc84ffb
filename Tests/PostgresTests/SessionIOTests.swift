import Foundation
@testable import Postgres
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
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<sleepers {
                    group.addTask { try await pool.query("SELECT pg_sleep(30) /* io-test-sleeper */") }
                }
                let running = try await Self.waitForSleepers(sleepers) {
                    try await Self.sleepers(tagged: "io-test-sleeper", in: pool)
                }
                #expect(running == sleepers)

                for value in 1...20 {
                    #expect(try await pool.query("SELECT \(value)::int").single().decode(Int.self, at: 0) == value)
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

    /// A lease's body runs on the reactor's thread (the task prefers it as its executor), so its round trips cost no
    /// hand-off between threads; a single `pool.query` and the caller's own code run where the caller runs.
    @Test func aLeaseBodyRunsOnTheReactorAndTheCallerStaysOnItsOwn() async throws {
        try await withTestPool(size: 2) { pool, _ in
            let (inside, threads) = try await pool.withConnection { connection in
                var names = [Self.currentThreadName()]
                var threads: Set<pthread_t> = [pthread_self()]
                for value in 1...3 {
                    let answer = try await connection.query("SELECT \(value)::int").single().decode(Int.self, at: 0)
                    #expect(answer == value)
                    names.append(Self.currentThreadName())
                    threads.insert(pthread_self())
                }
                return (names, threads)
            }
            #expect(inside == Array(repeating: "pg-reactor", count: 4))
            #expect(threads.count == 1)  // one reactor's thread: the session's
            #expect(Self.currentThreadName() != "pg-reactor")
            try await pool.query("SELECT 1")
            #expect(Self.currentThreadName() != "pg-reactor")
        }
    }

    /// Sessions waiting on a reactor's thread (as lease bodies do, which prefer it) do not hold that thread: another
    /// session of the same reactor completes its statements meanwhile. The sessions are put on one reactor on purpose:
    /// a pool deals them out by how many sessions each reactor carries, which other tests change.
    @Test(.timeLimit(.minutes(1)))
    func waitingSessionsLeaveTheirReactorFree() async throws {
        try await withTestDatabase { database in
            let configuration = ConnectionConfiguration(
                connectionString: database.connectionString, applicationName: "session-io-test"
            )
            let other = try await PostgresConnection(configuration: configuration)
            let reactor = await other.reactor
            let sleepers = [
                try await PostgresConnection(configuration: configuration, reactor: reactor),
                try await PostgresConnection(configuration: configuration, reactor: reactor),
            ]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sleeper in sleepers {
                    group.addTask {
                        try await withTaskExecutorPreference(reactor) {
                            _ = try await sleeper.query("SELECT pg_sleep(30) /* reactor-test-sleeper */")
                        }
                    }
                }
                let running = try await Self.waitForSleepers(sleepers.count) {
                    try await Self.sleepers(tagged: "reactor-test-sleeper", on: other)
                }
                #expect(running == sleepers.count)
                let (sum, threads) = try await withTaskExecutorPreference(reactor) {
                    var sum = 0
                    var threads: Set<String> = []
                    for value in 1...20 {
                        sum += try await other.query("SELECT \(value)::int").single().decode(Int.self, at: 0)
                        threads.insert(Self.currentThreadName())
                    }
                    return (sum, threads)
                }
                #expect(sum == 210)
                #expect(threads == ["pg-reactor"])
                for sleeper in sleepers { sleeper.cancelRunningStatement() }
                while let outcome = await group.nextResult() {
                    #expect(throws: PostgresError.self) { try outcome.get() }
                }
            }
            #expect(try await Self.sleepers(tagged: "reactor-test-sleeper", on: other) == 0)
            for session in sleepers + [other] { await session.close() }
        }
    }

    /// Statements running on the server whose text contains `tag`, other than the one asking.
    private static func sleepers(tagged tag: String, on session: PostgresConnection) async throws -> Int {
        try await session.query("""
            SELECT count(*) FROM pg_stat_activity
             WHERE query LIKE \("%" + tag + "%") AND state = 'active' AND pid <> pg_backend_pid()
            """).single().decode(Int.self, at: 0)
    }

    private static func sleepers(tagged tag: String, in pool: DatabasePool) async throws -> Int {
        try await pool.withConnection { try await sleepers(tagged: tag, on: $0) }
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

    /// The kernel's name of the calling thread (the reactor names its thread).
    private static func currentThreadName() -> String {
        let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        return name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }
}
