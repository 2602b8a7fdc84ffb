import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct TransactionTests {
    struct Boom: Error {}

    @Test func committedWhenTheBodyReturns() async throws {
        try await withTestPool { pool, _ in
            try await pool.query("CREATE TABLE t (v int)")
            let inserted = try await pool.withTransaction { connection in
                try await connection.query("INSERT INTO t VALUES (1), (2)").affectedRows
            }
            #expect(inserted == 2)
            #expect(try await PostgresTestQueries.rows(in: pool) == 2)
        }
    }

    @Test func rolledBackWhenTheBodyThrows() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int)")
            await #expect(throws: Boom.self) {
                try await pool.withTransaction { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    throw Boom()
                }
            }
            #expect(try await PostgresTestQueries.rows(in: pool) == 0)
        }
    }

    @Test func aSwallowedErrorStillRollsBackTheWhole() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int PRIMARY KEY)")
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withTransaction { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    _ = try? await connection.query("INSERT INTO t VALUES (1)")  // fails; the body ignores it
                }
            }
            #expect(error?.kind == .client)
            #expect(try await PostgresTestQueries.rows(in: pool) == 0)
        }
    }

    /// The body's first statement fails before anything is sent (preparing it, or a NUL in a parameter), and the body
    /// swallows that: the `BEGIN` must still go with the next statement, or that one would commit on its own.
    @Test(arguments: ["prepare", "nul"])
    func aFirstStatementThatFailsBeforeSendingKeepsTheTransaction(failure: String) async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int)")
            await #expect(throws: Boom.self) {
                try await pool.withTransaction { connection in
                    if failure == "prepare" {
                        _ = try? await connection.query("SELECT * FROM no_such_table", prepare: true)
                    } else {
                        _ = try? await connection.query("SELECT \("a\u{0}b")::text")
                    }
                    try await connection.query("INSERT INTO t VALUES (1)")
                    throw Boom()
                }
            }
            #expect(try await PostgresTestQueries.rows(in: pool) == 0)
        }
    }

    /// Two tasks of one body share the session: a statement never yields the session halfway (in pipeline mode libpq
    /// would take the second statement, which would then read the first one's results), so whichever starts second
    /// waits for the first to finish (on a loaded machine either may start first), each gets its own answers, and
    /// the session serves the next lease.
    @Test(.timeLimit(.minutes(1)))
    func twoStatementsAtOnceOnOneSessionRunOneAfterTheOther() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let answers = try await pool.withSession { connection in
                try await withThrowingTaskGroup(of: [Int].self) { group in
                    group.addTask {
                        try await connection.pipeline(["SELECT 1 FROM pg_sleep(0.3)", "SELECT 2"])
                            .map { try $0.scalar(Int.self) }
                    }
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(100))
                        return [try await connection.query("SELECT 3").scalar(Int.self)]
                    }
                    var answers: [[Int]] = []
                    for try await answer in group { answers.append(answer) }
                    return answers
                }
            }
            #expect(answers.sorted { $0[0] < $1[0] } == [[1, 2], [3]])
            #expect(try await pool.query("SELECT 4").scalar(Int.self) == 4)
        }
    }

    /// COPY is not spoken here: refused as a client error (not a hang), and the pool goes on with a fresh session.
    @Test(.timeLimit(.minutes(1)))
    func copyIsRefusedAndThePoolGoesOn() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let error = await #expect(throws: PostgresError.self) {
                _ = try await pool.query("COPY (SELECT 1) TO STDOUT")
            }
            #expect(error?.kind == .client)
            let next = try await pool.query("SELECT 3").scalar(Int.self)
            #expect(next == 3)
        }
    }

    @Test func rolledBackWhenTheTaskIsCancelled() async throws {
        try await withTestPool(size: 2) { pool, _ in
            try await pool.query("CREATE TABLE t (v int)")
            let task = Task {
                try await pool.withTransaction(timeout: .seconds(30)) { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    try await connection.query("SELECT pg_sleep(10)")
                }
            }
            try await waitUntil {
                try await PostgresTestQueries.activeSleeps(in: pool) == 1
            }
            task.cancel()
            await #expect(throws: (any Error).self) { try await task.value }
            #expect(try await PostgresTestQueries.rows(in: pool) == 0)
        }
    }

    @Test func pipelineRunsAllStatementsAsOneUnit() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int PRIMARY KEY)")
            let results = try await pool.withConnection { connection in
                try await connection.pipeline([
                    "INSERT INTO t VALUES (\(1))", "INSERT INTO t VALUES (\(2)) RETURNING v", "SELECT count(*) FROM t",
                ])
            }
            #expect(results.count == 3)
            #expect(try results[1].scalar(Int.self) == 2)
            #expect(try results[2].scalar(Int.self) == 2)
            // A failing statement in the middle: nothing of the batch is applied, its error is thrown.
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withConnection { connection in
                    try await connection.pipeline([
                        "INSERT INTO t VALUES (\(3))", "INSERT INTO t VALUES (\(1))", "INSERT INTO t VALUES (\(4))",
                    ])
                }
            }
            #expect(error?.isUniqueViolation == true)
            let values = try await pool.query("SELECT v FROM t ORDER BY v").values(Int.self)
            #expect(values == [1, 2])
        }
    }
}

extension TransactionTests {
    @Test func beginTravelsWithTheFirstStatementAndKeepsItsIsolationLevel() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let level = try await pool.withTransaction(isolation: .serializable) { connection in
                try await connection.query("SHOW transaction_isolation").scalar(String.self)
            }
            #expect(level == "serializable")
            let prepared = try await pool.withTransaction(isolation: .repeatableRead) { connection in
                try await connection.pipeline(["SHOW transaction_isolation"], prepare: true)[0]
                    .scalar(String.self)
            }
            #expect(prepared == "repeatable read")
        }
    }

    @Test func pipelinesAndCommitWithMakeOneTransaction() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int PRIMARY KEY)")
            let seen = try await pool.withTransaction { connection in
                let results = try await connection.pipeline(["INSERT INTO t VALUES (\(1))", "SELECT count(*) FROM t"],
                                                      prepare: true)
                try await connection.commit(with: ["INSERT INTO t VALUES (\(2))"], prepare: true)
                return try results[1].scalar(Int.self)
            }
            #expect(seen == 1)
            // Both rows were written by one transaction: the same xmin.
            let writers = try await pool.query("SELECT count(DISTINCT xmin::text) FROM t").scalar(Int.self)
            #expect(writers == 1)
            #expect(try await PostgresTestQueries.rows(in: pool) == 2)
        }
    }

    @Test func aFailureInCommitWithAppliesNothingAndTheSessionStaysUsable() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int PRIMARY KEY)")
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withTransaction { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    try await connection.commit(with: ["INSERT INTO t VALUES (\(1))", "INSERT INTO t VALUES (\(3))"])
                }
            }
            #expect(error?.isUniqueViolation == true)
            #expect(try await PostgresTestQueries.rows(in: pool) == 0)
        }
    }

    @Test func aStatementAfterCommitWithIsRefused() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int)")
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withTransaction { connection in
                    try await connection.commit(with: ["INSERT INTO t VALUES (\(1))"])
                    try await connection.query("INSERT INTO t VALUES (2)")  // would run outside the transaction
                }
            }
            #expect(error?.kind == .client)
            let values = try await pool.query("SELECT v FROM t").values(Int.self)
            #expect(values == [1])  // the commit happened; the statement after it did not run
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { try await $0.commit(with: ["SELECT 1"]) }  // no transaction open
            }
        }
    }

    /// A transaction whose body is one ``PostgresConnection/commit(with:prepare:)`` is one round trip: BEGIN, the
    /// statements and COMMIT in one pipeline, once each session has prepared them; a statement alone is one more.
    @Test func aTransactionOfCommitWithIsOneRoundTrip() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE t (v int)")
            func transaction(_ value: Int) async throws -> Int {
                try await pool.withTransaction { connection in
                    let before = connection.roundTrips
                    try await connection.commit(with: ["LOCK TABLE t IN ROW EXCLUSIVE MODE",
                                                       "INSERT INTO t VALUES (\(value))"], prepare: true)
                    return connection.roundTrips - before
                }
            }
            #expect(try await transaction(1) == 3)  // two prepares, then the pipeline
            #expect(try await transaction(2) == 1)
            let alone = try await pool.withSession { connection in
                let before = connection.roundTrips
                try await connection.query("SELECT 1")
                return connection.roundTrips - before
            }
            #expect(alone == 1)
            #expect(try await PostgresTestQueries.rows(in: pool) == 2)
        }
    }
}

enum PostgresTestQueries {
    /// How many rows the test table `t` holds.
    static func rows(in pool: DatabasePool) async throws -> Int {
        try await pool.query("SELECT count(*) FROM t").scalar(Int.self)
    }

    /// Statements running `pg_sleep` right now, other than the asking one.
    static func activeSleeps(in pool: DatabasePool) async throws -> Int {
        try await pool.query("""
            SELECT count(*) FROM pg_stat_activity
            WHERE query LIKE '%pg_sleep%' AND state = 'active' AND pid <> pg_backend_pid()
              AND datname = current_database()
            """).scalar(Int.self)
    }
}
