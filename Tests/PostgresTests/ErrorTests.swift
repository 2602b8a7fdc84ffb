import Foundation
import Postgres
import TestSupport
import Testing

/// Server errors surface as their own cases, and the session stays usable after each.
@Suite struct ErrorTests {
    @Test func uniqueViolationNamesItsConstraintAndHidesTheRow() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE users (email text CONSTRAINT users_email_key UNIQUE)")
            try await pool.query("INSERT INTO users VALUES (\("alice@example.com"))")
            let error = await #expect(throws: PostgresError.self) {
                try await pool.query("INSERT INTO users VALUES (\("alice@example.com"))")
            }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.constraint == "users_email_key")
            #expect(error?.detail?.contains("alice@example.com") == true)  // available to code…
            #expect(error?.description.contains("alice@example.com") == false)  // …never printed
            // The same (only) session serves the next statement.
            #expect(try await pool.query("SELECT count(*) FROM users").scalar(Int.self) == 1)
        }
    }

    @Test func serverMessagesEchoingInputAreMaskedInDescriptions() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let error = await #expect(throws: PostgresError.self) {
                try await pool.query("SELECT \("12abc-secret")::int")
            }
            #expect(error?.sqlState == "22P02")
            #expect(error?.description.contains("12abc-secret") == false)
        }
    }

    @Test func serializationFailureIsItsOwnCase() async throws {
        try await withTestPool(size: 2) { pool, _ in
            try await pool.query("CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)")
            try await pool.query("INSERT INTO counters VALUES (1, 0)")
            // Two serializable transactions read, then both write the same row: the second commit must fail.
            let first = try await PostgresConnectionPair(pool: pool)
            defer { Task { await first.release() } }
            try await first.a.query("BEGIN ISOLATION LEVEL SERIALIZABLE")
            try await first.b.query("BEGIN ISOLATION LEVEL SERIALIZABLE")
            _ = try await first.a.query("SELECT n FROM counters WHERE id = 1")
            _ = try await first.b.query("SELECT n FROM counters WHERE id = 1")
            try await first.a.query("UPDATE counters SET n = n + 1 WHERE id = 1")
            try await first.a.query("COMMIT")
            let error = await #expect(throws: PostgresError.self) {
                try await first.b.query("UPDATE counters SET n = n + 1 WHERE id = 1")
            }
            #expect(error?.isSerializationFailure == true)
            #expect(error?.isTransient == true)
            try await first.b.query("ROLLBACK")
            #expect(try await first.b.query("SELECT n FROM counters").scalar(Int.self) == 1)
        }
    }

    @Test func cancelledQueryIsItsOwnCaseAndTheSessionIsReusable() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let backend = try await pool.query("SELECT pg_backend_pid()").scalar(Int32.self)
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withConnection(timeout: .milliseconds(200)) { connection in
                    try await connection.query("SELECT pg_sleep(5)")
                }
            }
            #expect(error?.kind == .timeout)
            #expect(error?.isQueryCancelled == true)
            // The same session serves the next statement: it was kept, not replaced.
            let next = try await pool.query("SELECT pg_backend_pid()").scalar(Int32.self)
            #expect(next == backend)
        }
    }

    @Test func statementTimeoutIsTheServerSideBackstop() async throws {
        try await withTestDatabase { database in
            let pool = DatabasePool(connection: ConnectionConfiguration(
                connectionString: database.connectionString, applicationName: "tests",
                statementTimeout: .milliseconds(200)
            ), pool: PoolConfiguration(size: 1, queryTimeout: nil))
            let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT pg_sleep(3)") }
            #expect(error?.sqlState == "57014")
            let next = try await pool.query("SELECT 2").scalar(Int.self)
            #expect(next == 2)
            await pool.close()
        }
    }

    @Test func connectingToNothingFailsFastWithAnUnavailableError() async throws {
        let port = try freeLoopbackPort()
        let pool = DatabasePool(connection: ConnectionConfiguration(
            connectionString: "host=127.0.0.1 port=\(port) user=nobody dbname=none sslmode=disable",
            applicationName: "tests"
        ))
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(error?.kind == .connectFailed)
        #expect(error?.isUnavailable == true)
        #expect(await pool.isReady(timeout: .seconds(1)) == false)
        await pool.close()
    }

    @Test func invalidConnectionStringsDoNotEchoTheirSecrets() async throws {
        let pool = DatabasePool(connection: ConnectionConfiguration(
            connectionString: "postgresql://user:s3cr3t@host:notaport/db", applicationName: "tests"
        ))
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(error?.kind == .connectFailed)
        #expect(error?.description.contains("s3cr3t") == false)
        await pool.close()
    }
}

/// Two sessions leased side by side, for tests that interleave transactions.
struct PostgresConnectionPair {
    let a: PostgresConnection
    let b: PostgresConnection
    private let releaseA: @Sendable () async -> Void
    private let releaseB: @Sendable () async -> Void

    init(pool: DatabasePool) async throws {
        (a, releaseA) = try await Self.hold(pool)
        (b, releaseB) = try await Self.hold(pool)
    }

    func release() async {
        await releaseA()
        await releaseB()
    }

    /// Leases a session and keeps it until the returned closure is called.
    static func hold(_ pool: DatabasePool) async throws -> (PostgresConnection, @Sendable () async -> Void) {
        let (leased, leasedContinuation) = AsyncStream.makeStream(of: PostgresConnection.self)
        let (done, doneContinuation) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await pool.withConnection(timeout: .seconds(60)) { connection in
                leasedContinuation.yield(connection)
                for await _ in done { break }
            }
        }
        guard let connection = await leased.first(where: { _ in true }) else {
            try await holder.value
            throw TestSupportError("lease failed")
        }
        return (connection, {
            doneContinuation.finish()
            _ = try? await holder.value
        })
    }
}
