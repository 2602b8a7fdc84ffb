@testable import FavoritesService
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// Writes that come while a transaction runs share the next one, a statement the server refuses costs the writes
/// beside it nothing, and a transaction takes its streams' locks in one order.
@Suite struct GroupCommitTests {
    static func withCommits(_ body: (GroupCommit, DatabasePool) async throws -> Void) async throws {
        let migrator = Migrator(schema: "favorites", migrations: FavoritesMigrations.all)
        try await withTestPool(migrators: [migrator], size: 4, searchPath: "favorites") { pool, _ in
            try await body(GroupCommit(pool: pool, leaders: 1), pool)
        }
    }

    /// Waits until a statement containing `marker` runs on the server (and so holds the one transaction in flight).
    static func running(_ marker: String, on pool: DatabasePool) async throws {
        let count = try await eventually({
            try await pool.query("""
                SELECT count(*)::integer AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND state = 'active' AND query LIKE '%' || \(marker) || '%'
                   AND pid <> pg_backend_pid()
                """).single().decode(Int.self, column: "n")
        }, until: { $0 == 1 })
        try #require(count == 1)
    }

    static func transaction(of result: QueryResult) throws -> String {
        try result.single().decode(String.self, column: "id")
    }

    @Test func writesThatComeMeanwhileShareOneTransaction() async throws {
        try await Self.withCommits { commits, pool in
            async let first = commits.commit(.init(
                stream: "user-first", statement: "SELECT txid_current()::text AS id, pg_sleep(0.4) AS first_write"))
            try await Self.running("first_write", on: pool)
            let transactions = try await withThrowingTaskGroup(of: String.self) { group in
                for n in 0..<5 {
                    group.addTask {
                        try Self.transaction(of: try await commits.commit(.init(
                            stream: "user-\(n)", statement: "SELECT txid_current()::text AS id")))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(transactions.count == 5)
            #expect(Set(transactions).count == 1, "the five writes waited in line and shared one transaction")
            #expect(try Self.transaction(of: try await first) != transactions[0])
        }
    }

    @Test func aRefusedStatementFailsOnlyItsOwnWrite() async throws {
        try await Self.withCommits { commits, pool in
            try await pool.query("CREATE TABLE written (n integer PRIMARY KEY)")
            async let first = commits.commit(.init(
                stream: "user-first", statement: "SELECT pg_sleep(0.4) AS first_write"))
            try await Self.running("first_write", on: pool)
            let refusals = await withTaskGroup(of: (Int, String?).self) { group in
                for n in 0..<5 {
                    group.addTask {
                        let statement: SQL = n == 2 ? "SELECT 1 / 0" : "INSERT INTO written VALUES (\(n))"
                        do {
                            _ = try await commits.commit(.init(stream: "user-\(n)", statement: statement))
                            return (n, nil)
                        } catch {
                            return (n, (error as? PostgresError)?.sqlState ?? "\(error)")
                        }
                    }
                }
                return await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            _ = try await first
            #expect(refusals == [2: "22012"], "only the division by zero failed")
            let written = try await pool.query("SELECT n FROM written ORDER BY n").rows
                .map { try $0.decode(Int.self, column: "n") }
            #expect(written == [0, 1, 3, 4], "each other write applied once")
        }
    }

    /// A transaction that locks two streams, one of them held elsewhere, holds the other only when its key is the
    /// lower: the locks are taken in key order whatever order the streams are listed in.
    @Test func streamsAreLockedInTheOrderOfTheirKeys() async throws {
        try await Self.withCommits { _, pool in
            let keyed = try await pool.query("""
                SELECT stream, hashtext(stream)::oid::text AS key FROM unnest(ARRAY['user-x', 'user-y']) AS stream
                 ORDER BY hashtext(stream)
                """).rows
                .map { (try $0.decode(String.self, column: "stream"), try $0.decode(String.self, column: "key")) }
            let (low, high) = (keyed[0], keyed[1])
            try await pool.withSession { holder in
                let holderPID = try await holder.query("""
                    SELECT pg_backend_pid() AS pid, pg_advisory_lock(1163285587, hashtext(\(high.0)))::text
                    """).single().decode(Int.self, column: "pid")
                async let both: Void = pool.withTransaction { connection in
                    try await connection.query(EventStore.locking([high.0, low.0]))
                }
                let locks = try await eventually({
                    try await pool.query("""
                        SELECT objid::text AS key, granted FROM pg_locks
                         WHERE locktype = 'advisory' AND objsubid = 2 AND pid NOT IN (pg_backend_pid(), \(holderPID))
                        """).rows.map { row in
                            (try row.decode(String.self, column: "key"), try row.decode(Bool.self, column: "granted"))
                        }
                }, until: { $0.contains { $0.0 == high.1 && !$0.1 } })
                #expect(locks.contains { $0 == (high.1, false) }, "waits for the higher key")
                #expect(locks.contains { $0 == (low.1, true) }, "holding the lower one")
                try await holder.query("SELECT pg_advisory_unlock(1163285587, hashtext(\(high.0)))")
                try await both
            }
        }
    }
}
