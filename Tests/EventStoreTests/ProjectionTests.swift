@testable import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// Async projections on a real PostgreSQL: the gap-safe cursor, exactly-once application, a projector killed mid-batch,
/// one instance at a time, and a rebuild while writers keep appending.
@Suite struct ProjectionTests {
    static let migrators = [Migrator(schema: "projection_test", migrations: [
        Migration(1, "event_store", sql: EventStoreSchema.sql),
        Migration(2, "projections", sql: EventStoreSchema.projectionsSQL),
        Migration(3, "stream_lock", sql: EventStoreSchema.lockFunctionSQL),
        Migration(4, "lean_log", sql: EventStoreSchema.leanLogSQL),
        Migration(5, "gated_stream_lock", sql: EventStoreSchema.gatedLockSQL),
        Migration(6, "ledger", sql: """
            CREATE TABLE ledger (position bigint PRIMARY KEY, stream_id text NOT NULL, version bigint NOT NULL);
            """),
    ])]

    /// Writes down every event it is given. The position is the key, so applying an event twice fails the batch.
    struct Ledger: Projection {
        let name = "ledger"
        let tables = ["ledger"]
        /// Stops after the first event of a batch, in a statement a test can find and kill.
        var stallMidBatch = false
        /// Throws instead of applying anything, as a projection with a bug would.
        var failing = false

        func statements(for events: [RecordedEvent], in tables: ProjectionTables) throws -> [SQL] {
            if failing, !events.isEmpty { throw TestSupportError("the ledger refuses to apply events") }
            var statements: [SQL] = []
            for (index, event) in events.enumerated() {
                statements.append("""
                    INSERT INTO \(identifier: tables["ledger"]) (position, stream_id, version)
                    VALUES (\(event.position), \(event.streamID), \(event.version))
                    """)
                if stallMidBatch, index == 0 { statements.append("SELECT pg_sleep(60) /* ledger-stall */") }
            }
            return statements
        }
    }

    static func withStore(_ body: (DatabasePool) async throws -> Void) async throws {
        try await withTestPool(migrators: migrators, size: 8, searchPath: "projection_test") { pool, _ in
            try await body(pool)
        }
    }

    @discardableResult
    static func append(_ item: String, to stream: String, pool: DatabasePool) async throws -> AppendResult {
        try await pool.withTransaction { connection in
            try await EventStore.append([EventStoreTests.event(item)], to: stream, expected: .any, on: connection)
        }
    }

    /// The positions in the ledger, in order.
    static func ledger(_ pool: DatabasePool) async throws -> [Int64] {
        try await pool.query("SELECT position FROM ledger ORDER BY position").values(Int64.self)
    }

    static func logPositions(_ pool: DatabasePool) async throws -> [Int64] {
        try await pool.query("SELECT position FROM events ORDER BY position").values(Int64.self)
    }

    /// Runs batches until the ledger satisfies `done`. Every test database lives in one cluster, and the projection
    /// stays behind the oldest transaction of the whole cluster, so another test's transaction may hold it back for a
    /// moment: this waits (up to a minute) instead of assuming it never happens.
    static func project(_ pool: DatabasePool, limit: Int = 100, until done: ([Int64]) -> Bool) async throws
        -> [Int64]
    {
        for _ in 0..<1200 {
            _ = try await ProjectionBatch.run(Ledger(), limit: limit, pool: pool)
            let ledger = try await ledger(pool)
            if done(ledger) { return ledger }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await ledger(pool)
    }

    @Test func aTransactionHeldOpenHoldsTheProjectionBackAndNothingIsSkipped() async throws {
        try await Self.withStore { pool in
            try await Self.append("before", to: "user-1", pool: pool)
            try await pool.withConnection { holder in
                try await holder.query("BEGIN")
                _ = try await EventStore.append([EventStoreTests.event("held")], to: "user-2", expected: .any,
                                                on: holder)
                // Two later transactions commit while the first is still open: their positions come after its.
                try await Self.append("after-1", to: "user-3", pool: pool)
                try await Self.append("after-2", to: "user-4", pool: pool)
                let committed = try await Self.logPositions(pool)
                #expect(committed.count == 3)

                let applied = try await Self.project(pool) { !$0.isEmpty }
                #expect(applied == [committed[0]])
                for _ in 0..<3 { _ = try await ProjectionBatch.run(Ledger(), limit: 100, pool: pool) }
                #expect(try await Self.ledger(pool) == [committed[0]], "nothing past the open transaction")
                let lag = try await ProjectionBatch.lag(of: "ledger", pool: pool)
                #expect(lag.events == 2)
                #expect(lag.oldest != nil)
                try await holder.query("COMMIT")
            }
            let all = try await Self.logPositions(pool)
            #expect(all.count == 4)
            #expect(try await Self.project(pool) { $0.count >= 4 } == all)
            #expect(try await ProjectionBatch.run(Ledger(), limit: 100, pool: pool) == .upToDate)
            #expect(try await ProjectionBatch.lag(of: "ledger", pool: pool).events == 0)
        }
    }

    /// Transaction ids are compared as numbers, not text: an event written after the ids gain a digit comes after.
    @Test func theLogIsReadInTransactionOrderWhenTheIdsGainADigit() async throws {
        try await Self.withStore { pool in
            try await Self.append("before", to: "user-1", pool: pool)
            let current = try await pool.query("SELECT pg_current_xact_id()::text").scalar(Int64.self)
            var boundary: Int64 = 10
            while boundary <= current { boundary *= 10 }
            // Spend ids up to the next power of ten (a fresh test cluster is in the hundreds or thousands).
            try await pool.query("""
                CREATE PROCEDURE spend_transaction_ids(n bigint) LANGUAGE plpgsql AS $$
                BEGIN
                    FOR i IN 1..n LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP;
                END $$
                """)
            try await pool.query("CALL spend_transaction_ids(\(min(boundary - current + 1, 200_000)))")
            try await Self.append("after-1", to: "user-2", pool: pool)
            try await Self.append("after-2", to: "user-1", pool: pool)
            let all = try await Self.logPositions(pool)
            // Applied in the wrong order, the checkpoint would stop at the first event and the next batch would
            // apply the later two again, breaking the ledger's key.
            #expect(try await Self.project(pool, limit: 1) { $0.count >= 3 } == all)
            #expect(try await ProjectionBatch.run(Ledger(), limit: 100, pool: pool) == .upToDate)
        }
    }

    @Test func aProjectorKilledMidBatchLosesAndDuplicatesNothing() async throws {
        try await Self.withStore { pool in
            for stream in ["user-1", "user-2", "user-3"] { try await Self.append("a", to: stream, pool: pool) }
            let stalled = Task {
                while true {  // until a batch gets to run (see `project`), then it stalls until killed
                    let outcome = try await ProjectionBatch.run(Ledger(stallMidBatch: true), limit: 100, pool: pool)
                    if case .applied = outcome { return outcome }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            var killed = 0
            for _ in 0..<1200 where killed == 0 {
                try await Task.sleep(for: .milliseconds(50))
                killed = try await pool.query("""
                    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                     WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
                       AND starts_with(query, 'SELECT pg_sleep(60) /* ledger-stall */')
                    """).scalar(Int.self)
            }
            #expect(killed == 1)
            await #expect(throws: (any Error).self) { try await stalled.value }
            // The killed batch wrote nothing and moved no checkpoint; a new projector applies every event once.
            #expect(try await Self.ledger(pool).isEmpty)
            let all = try await Self.logPositions(pool)
            #expect(try await Self.project(pool) { $0.count >= 3 } == all)
        }
    }

    @Test func oneInstanceAppliesAtATimeAndEachEventOnce() async throws {
        try await Self.withStore { pool in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask { try await Self.append("item-\(index)", to: "user-\(index % 10)", pool: pool) }
                }
                try await group.waitForAll()
            }
            try await pool.withConnection { holder in
                try await holder.query("BEGIN")
                try await holder.query("""
                    SELECT pg_advisory_xact_lock(\(ProjectionBatch.projectionLockClass), hashtext('ledger'))
                    """)
                #expect(try await ProjectionBatch.run(Ledger(), limit: 100, pool: pool) == .busy)
                try await holder.query("ROLLBACK")
            }
            // Two projectors side by side, small batches: a duplicate would break the ledger's key and throw.
            try await withThrowingTaskGroup(of: [Int64].self) { group in
                for _ in 0..<2 { group.addTask { try await Self.project(pool, limit: 7) { $0.count >= 50 } } }
                try await group.waitForAll()
            }
            #expect(try await Self.ledger(pool) == Self.logPositions(pool))
        }
    }

    @Test func aRebuildWhileWritersAppendEndsEqualToTheLog() async throws {
        try await Self.withStore { pool in
            for index in 0..<30 { try await Self.append("early-\(index)", to: "user-\(index % 3)", pool: pool) }
            _ = try await Self.project(pool) { $0.count >= 30 }
            let writer = Task {
                for index in 0..<60 { try await Self.append("late-\(index)", to: "user-\(index % 4)", pool: pool) }
            }
            // A transaction that stays open through the rebuild and appends only after the switch-over (as an erasure
            // does: it takes its id when it deletes view rows, and writes to the log later). The rebuilt checkpoint
            // must not get past it.
            let replayed = try await pool.withConnection { holder in
                try await holder.query("BEGIN")
                try await holder.query("SELECT pg_current_xact_id()")
                let replayed = try await ProjectionRebuild.rebuild(Ledger(), mode: .async, pool: pool, batchSize: 8)
                try await holder.perform { connection in
                    _ = try await EventStore.append([EventStoreTests.event("held")], to: "user-held", expected: .any,
                                                    on: connection)
                }
                try await holder.query("COMMIT")
                return replayed
            }
            try await writer.value
            #expect(replayed >= 30)
            // The rebuilt table took over with its checkpoint: the live projector carries on from there, exactly once,
            // the held transaction's event included.
            let all = try await Self.logPositions(pool)
            #expect(all.count == 91)
            #expect(try await Self.project(pool) { $0.count >= 91 } == all)
            #expect(try await pool.query("SELECT to_regclass('ledger_rebuild') IS NULL").scalar(Bool.self))
            #expect(try await pool.query("SELECT projection FROM projection_checkpoints").values(String.self)
                == ["ledger"])
        }
    }

    /// A writer that appends to the log and then writes the inline view (in whichever order its statement's plan
    /// locks them) while a rebuild switches over: the switch-over waits at the writers' gate, holding no table, so
    /// both finish. Without the gate it would hold the view and wait for the log, the writer would wait for the view,
    /// and PostgreSQL would end one of them as a deadlock. The same holds for the writers that lock their stream with
    /// `lock_event_stream` (an append, an erasure, a view's repair) as for the ones that send ``EventStore/locking(_:)``.
    @Test(arguments: [true, false])
    func aSwitchOverWaitsForAWriterInFlightInsteadOfDeadlocking(lockedByStatement: Bool) async throws {
        try await Self.withStore { pool in
            for index in 0..<5 { try await Self.append("early-\(index)", to: "user-\(index)", pool: pool) }
            try await pool.withConnection { writer in
                try await writer.query("BEGIN")
                if lockedByStatement {
                    try await writer.query(EventStore.locking("user-w"))
                } else {
                    try await writer.perform { connection in try await EventStore.lock("user-w", on: connection) }
                }
                try await writer.perform { connection in
                    _ = try await EventStore.append([EventStoreTests.event("w")], to: "user-w", expected: .any,
                                                    on: connection)
                }
                let rebuild = Task { try await ProjectionRebuild.rebuild(Ledger(), mode: .inline, pool: pool) }
                var waiting = false
                for _ in 0..<500 where !waiting {  // up to 10 s for the replay to reach its switch-over
                    waiting = try await pool.query("""
                        SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                                          AND classid = \(raw: EventStore.switchOverGate)::oid)
                        """).scalar(Bool.self)
                    if !waiting { try await Task.sleep(for: .milliseconds(20)) }
                }
                #expect(waiting)
                try await writer.query("LOCK TABLE ledger IN ROW EXCLUSIVE MODE")  // the view's write
                try await writer.query("COMMIT")
                #expect(try await rebuild.value == 6)
            }
            #expect(try await Self.ledger(pool) == Self.logPositions(pool))
        }
    }

    @Test func aSecondRebuildOfTheSameProjectionIsRefusedAndEveryRebuildReleasesItsLock() async throws {
        try await Self.withStore { pool in
            for index in 0..<5 { try await Self.append("item-\(index)", to: "user-\(index % 2)", pool: pool) }
            /// Rebuild locks held in this test's database, by any session.
            func heldRebuildLocks() async throws -> Int {
                try await pool.query("""
                    SELECT count(*)::int FROM pg_locks
                     WHERE locktype = 'advisory' AND classid = \(Int(ProjectionRebuild.rebuildLockClass))::oid
                       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """).scalar(Int.self)
            }
            // A rebuild in progress elsewhere holds the lock with its session: a second one is refused before it
            // touches anything.
            try await pool.withSession { holder in
                try await holder.query("""
                    SELECT pg_advisory_lock(\(ProjectionRebuild.rebuildLockClass),
                                            hashtext(coalesce(current_schema(), '') || '.ledger'))
                    """)
                await #expect(throws: ProjectionRebuild.AlreadyRunning.self) {
                    try await ProjectionRebuild.rebuild(Ledger(), mode: .async, pool: pool)
                }
                #expect(try await holder.query("SELECT to_regclass('ledger_rebuild') IS NULL")
                    .scalar(Bool.self))
                try await holder.query("""
                    SELECT pg_advisory_unlock(\(ProjectionRebuild.rebuildLockClass),
                                              hashtext(coalesce(current_schema(), '') || '.ledger'))
                    """)
            }
            // A rebuild that fails and one that succeeds each leave the lock free. Inline: its switch-over takes every
            // event, where an async one leaves to the runner what transactions elsewhere in the cluster hold back.
            await #expect(throws: TestSupportError.self) {
                try await ProjectionRebuild.rebuild(Ledger(failing: true), mode: .inline, pool: pool)
            }
            #expect(try await heldRebuildLocks() == 0)
            #expect(try await ProjectionRebuild.rebuild(Ledger(), mode: .inline, pool: pool) == 5)
            #expect(try await heldRebuildLocks() == 0)
            #expect(try await Self.ledger(pool) == Self.logPositions(pool))
        }
    }
}
