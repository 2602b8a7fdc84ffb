import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct PoolTests {
    @Test func twoHundredConcurrentTasksOverEightSessionsAllSucceed() async throws {
        try await withTestPool(size: 8) { pool, _ in
            try await pool.query("CREATE TABLE hits (task int PRIMARY KEY, backend int NOT NULL)")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<200 {
                    group.addTask {
                        try await pool.query("""
                            INSERT INTO hits SELECT \(task), pg_backend_pid() FROM pg_sleep(0.005)
                            """)
                    }
                }
                try await group.waitForAll()
            }
            let row = try await pool.query("SELECT count(*), count(DISTINCT backend) AS backends FROM hits").single()
            #expect(try row.decode(Int.self, column: "count") == 200)
            // Bounded: never more sessions than the pool's size.
            #expect(try row.decode(Int.self, column: "backends") <= 8)
            let statistics = pool.statistics
            #expect(statistics.inUse == 0)
            #expect(statistics.waiters == 0)
        }
    }

    @Test func leaseTimeoutGivesTheBusyError() async throws {
        try await withTestDatabase { database in
            let pool = database.makePool(size: 1, leaseTimeout: .milliseconds(200))
            let (_, release) = try await PostgresConnectionPair.hold(pool)
            // The session is held for the whole test, so only the lease timeout can end the wait: its error kind says so.
            let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
            #expect(error?.kind == .poolTimeout)
            #expect(error?.isUnavailable == true)
            await release()
            #expect(try await pool.query("SELECT 1").scalar(Int.self) == 1)
            await pool.close()
        }
    }

    @Test func cancellingAWaiterRemovesItFromTheQueue() async throws {
        try await withTestDatabase { database in
            let pool = database.makePool(size: 1, leaseTimeout: .seconds(30))
            let (_, release) = try await PostgresConnectionPair.hold(pool)
            let waiter = Task { try await pool.query("SELECT 1") }
            while pool.statistics.waiters == 0 { try await Task.sleep(for: .milliseconds(10)) }
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            #expect(pool.statistics.waiters == 0)
            await release()
            await pool.close()
        }
    }

    @Test func cancellingATaskCancelsItsQueryOnTheServer() async throws {
        try await withTestPool(size: 2) { pool, _ in
            let sleeper = Task {
                try await pool.withConnection(timeout: .seconds(60)) { try await $0.query("SELECT pg_sleep(10)") }
            }
            // Wait until the statement is really running on the server.
            try await waitUntil {
                try await pool.query("""
                    SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active' AND datname = current_database()
                    """).scalar(Int.self) == 1
            }
            sleeper.cancel()
            // 57014 (query_canceled): the server stopped the statement; it did not run its ten seconds out.
            let error = await #expect(throws: PostgresError.self) { try await sleeper.value }
            #expect(error?.sqlState == "57014")
            let leftover = try await pool.query("""
                SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active' AND datname = current_database()
                """).scalar(Int.self)
            #expect(leftover == 0)
            // Both sessions still serve.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await pool.query("SELECT 1").scalar(Int.self) } }
                for try await value in group { #expect(value == 1) }
            }
        }
    }

    /// `PQcancel` opens a connection of its own and waits for the server: when that connection hangs, neither the
    /// thread that cancels nor the other sessions may hang with it, and the session must not serve another lease
    /// while its cancel is still on the way (a late cancel would stop that lease's statement).
    @Test func aCancelThatCannotReachTheServerBlocksNoThreadAndRetiresItsSession() async throws {
        try await withTestDatabase { database in
            let server = try await database.makePool(size: 1).closing { pool in
                let row = try await pool.query("""
                    SELECT host(inet_server_addr()) AS host, current_setting('port')::int AS port
                    """).single()
                return (host: try row.decode(String?.self, column: "host"),
                        port: try row.decode(Int.self, column: "port"))
            }
            let relay = try TCPRelay(to: server.host ?? "127.0.0.1", port: server.port)
            defer { relay.stop() }
            let pool = DatabasePool(
                connection: ConnectionConfiguration(
                    connectionString: database.connectionString + " host=127.0.0.1 port=\(relay.port)",
                    applicationName: "favoriteme-tests"
                ),
                pool: PoolConfiguration(size: 2, leaseTimeout: .seconds(60), queryTimeout: .seconds(60))
            )
            try await pool.closing { pool in
                let sleeper = Task {
                    try await pool.withConnection { connection in
                        let backend = try await connection.query("SELECT pg_backend_pid()").scalar(Int32.self)
                        try await connection.query("SELECT pg_sleep(2)")
                        return backend
                    }
                }
                try await waitUntil {
                    try await pool.query("""
                        SELECT count(*) FROM pg_stat_activity
                        WHERE query = 'SELECT pg_sleep(2)' AND state = 'active' AND datname = current_database()
                        """).scalar(Int.self) == 1
                }
                relay.swallowNewConnections()  // the sessions' connections go on; the cancel's new one hangs

                let cancelled = DispatchSemaphore(value: 0)
                Thread {
                    sleeper.cancel()
                    cancelled.signal()
                }.start()
                let returned = cancelled.wait(timeout: .now() + 2) == .success
                #expect(returned, "cancelling the task waited for the unreachable server")
                if !returned { relay.stop() }  // lets the old, blocking cancel go, so that this fails instead of hanging

                // The other session still serves while the cancel hangs.
                #expect(try await pool.query("SELECT 7").scalar(Int.self) == 7)
                // The cancel never reached the server, so the statement ran out its two seconds.
                let sleeperBackend = try await sleeper.value
                relay.forwardNewConnections()
                // Two leases at once need both sessions: the sleeper's was closed and replaced (a second after its
                // lease ended, its cancel still hanging), not handed out again.
                let backends = try await withThrowingTaskGroup(of: Int32.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            try await pool.withConnection { connection in
                                try await connection.query("SELECT pg_sleep(0.2)")
                                return try await connection.query("SELECT pg_backend_pid()").scalar(Int32.self)
                            }
                        }
                    }
                    return try await group.reduce(into: [Int32]()) { $0.append($1) }
                }
                #expect(backends.count == 2)
                #expect(!backends.contains(sleeperBackend))
            }
        }
    }

    @Test func sessionLeftInsideATransactionIsNeverHandedOutAgain() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let firstBackend = try await pool.withConnection { connection in
                try await connection.query("BEGIN")  // left open on purpose
                return try await connection.query("SELECT pg_backend_pid()").scalar(Int32.self)
            }
            // The next lease gets a new session, and the abandoned one is closed (its transaction rolled back).
            let backend = try await pool.query("SELECT pg_backend_pid()").scalar(Int32.self)
            #expect(backend != firstBackend)
            try await waitUntil {
                try await pool.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(firstBackend)")
                    .scalar(Int.self) == 0
            }
        }
    }

    @Test func terminatedSessionsAreReplacedSilently() async throws {
        try await withTestPool(size: 2) { pool, database in
            let first = try await pool.query("SELECT pg_backend_pid()").scalar(Int32.self)
            let admin = database.makePool(size: 1)
            try await admin.query("SELECT pg_terminate_backend(\(first))")
            try await waitUntil {
                try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(first)")
                    .scalar(Int.self) == 0
            }
            await admin.close()
            // The dead session is noticed on lease and replaced: no error reaches the caller.
            for _ in 0..<4 {
                let backend = try await pool.query("SELECT pg_backend_pid()").scalar(Int32.self)
                #expect(backend != first)
            }
        }
    }

    @Test func sessionSettingsAreApplied() async throws {
        try await withTestPool(size: 1, searchPath: "custom") { pool, _ in
            let row = try await pool.query("""
                SELECT current_setting('TimeZone') AS zone, current_setting('DateStyle') AS style,
                       current_setting('extra_float_digits') AS digits, current_setting('search_path') AS path,
                       current_setting('application_name') AS application,
                       current_setting('idle_in_transaction_session_timeout') AS idle,
                       current_setting('tcp_keepalives_idle') AS keepalive,
                       inet_server_addr() IS NULL AS over_unix_socket
                """).single()
            func setting(_ name: String) throws -> String { try row.decode(String.self, column: name) }
            // A Unix socket has no TCP keepalive to set.
            #expect(try setting("keepalive") == (row.decode(Bool.self, column: "over_unix_socket") ? "0" : "30"))
            #expect(try setting("zone") == "UTC")
            #expect(try setting("style").hasPrefix("ISO"))
            #expect(try setting("digits") == "3")
            #expect(try setting("path") == "custom")
            #expect(try setting("application") == "favoriteme-tests")
            #expect(try setting("idle") == "30s")
        }
    }

    @Test func preparedStatementsAreReusedAndSurviveSchemaChanges() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE items (id int PRIMARY KEY, title text)")
            try await pool.query("INSERT INTO items VALUES (1, 'a'), (2, 'b')")
            for id in [1, 2, 1] {
                let title = try await pool.query("SELECT * FROM items WHERE id = \(id)", prepare: true)
                    .single().decode(String.self, column: "title")
                #expect(title == (id == 1 ? "a" : "b"))
            }
            #expect(try await Self.preparedStatements(in: pool) == 1)
            // A migration changes the result type: the first call fails (PostgreSQL's rule), the next re-prepares.
            try await pool.query("ALTER TABLE items ADD COLUMN extra int")
            _ = try? await pool.query("SELECT * FROM items WHERE id = \(1)", prepare: true)
            let columns = try await pool.query("SELECT * FROM items WHERE id = \(1)", prepare: true).columns
            #expect(columns == ["id", "title", "extra"])
            #expect(try await Self.preparedStatements(in: pool) == 1)  // the refused one deallocated
        }
    }

    /// Refused inside a transaction (as its first statement, sent with BEGIN in a pipeline, or after another one), a
    /// prepared statement cannot be deallocated there: it is, once the transaction has ended.
    @Test func statementsRefusedInATransactionAreDeallocatedAfterIt() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await pool.query("CREATE TABLE items (id int PRIMARY KEY, title text)")
            try await pool.query("INSERT INTO items VALUES (1, 'a')")
            for (column, statementsBefore) in [("first_extra", false), ("second_extra", true)] {
                try await pool.query("SELECT * FROM items WHERE id = \(1)", prepare: true)
                try await pool.query("ALTER TABLE items ADD COLUMN \(identifier: column) int")
                await #expect(throws: PostgresError.self) {
                    try await pool.withTransaction { connection in
                        if statementsBefore { try await connection.query("SELECT 1") }
                        return try await connection.query("SELECT * FROM items WHERE id = \(1)", prepare: true)
                    }
                }
                let columns = try await pool.query("SELECT * FROM items WHERE id = \(1)", prepare: true).columns
                #expect(columns.last == column)
                #expect(try await Self.preparedStatements(in: pool) == 1)
            }
        }
    }

    /// Prepared statements the pool's one session holds on the server.
    static func preparedStatements(in pool: DatabasePool) async throws -> Int {
        try await pool.withConnection { connection in
            try await connection.query("SELECT count(*) FROM pg_prepared_statements").scalar(Int.self)
        }
    }
}

/// Polls `condition` every 20 ms for up to `limit`.
func waitUntil(limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestSupportError("condition not met within \(limit)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
