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
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<sleepers {
                    group.addTask { try await pool.query("SELECT pg_sleep(30) /* io-test-sleeper */") }
                }
                let running = try await Self.waitForSleepers(sleepers, tagged: "io-test-sleeper", in: pool)
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
            let inside = try await pool.withConnection { connection in
                var names = [Self.currentThreadName()]
                for value in 1...3 {
                    let answer = try await connection.query("SELECT \(value)::int").single().decode(Int.self, at: 0)
                    #expect(answer == value)
                    names.append(Self.currentThreadName())
                }
                return names
            }
            #expect(inside == Array(repeating: "pg-reactor", count: 4))
            #expect(Self.currentThreadName() != "pg-reactor")
            try await pool.query("SELECT 1")
            #expect(Self.currentThreadName() != "pg-reactor")
        }
    }

    /// Sessions waiting inside lease bodies (on the reactor's thread) do not hold that thread: other bodies' statements
    /// complete meanwhile, and cancelling the waiting ones frees their backends.
    @Test(.timeLimit(.minutes(1)))
    func waitingLeaseBodiesLeaveTheReactorFree() async throws {
        try await withTestPool(size: 4) { pool, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        _ = try await pool.withConnection {
                            try await $0.query("SELECT pg_sleep(30) /* reactor-test-sleeper */")
                        }
                    }
                }
                let running = try await Self.waitForSleepers(2, tagged: "reactor-test-sleeper", in: pool)
                #expect(running == 2)
                let sum = try await pool.withConnection { connection in
                    var sum = 0
                    for value in 1...20 { sum += try await connection.query("SELECT \(value)::int").single().decode(Int.self, at: 0) }
                    return sum
                }
                #expect(sum == 210)
                group.cancelAll()
                while let outcome = await group.nextResult() {
                    #expect(throws: (any Error).self) { try outcome.get() }
                }
            }
            #expect(try await Self.sleepers(tagged: "reactor-test-sleeper", in: pool) == 0)
        }
    }

    /// Statements running on the server whose text contains `tag`, other than the one asking.
    private static func sleepers(tagged tag: String, in pool: DatabasePool) async throws -> Int {
        try await pool.query("""
            SELECT count(*) FROM pg_stat_activity
             WHERE query LIKE \("%" + tag + "%") AND state = 'active' AND pid <> pg_backend_pid()
            """).single().decode(Int.self, at: 0)
    }

    /// Polls (for up to about ten seconds) until `count` statements tagged `tag` run; returns how many ran last.
    private static func waitForSleepers(_ count: Int, tagged tag: String, in pool: DatabasePool) async throws -> Int {
        var running = 0
        for _ in 0..<200 where running < count {
            running = try await sleepers(tagged: tag, in: pool)
            if running < count { try await Task.sleep(for: .milliseconds(50)) }
        }
        return running
    }

    /// The kernel's name of the calling thread (the reactor names its thread).
    private static func currentThreadName() -> String {
        let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        return name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }
}
