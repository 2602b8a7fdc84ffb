import Logging
import Postgres

/// Rebuilds a projection from the log, blue/green: the events are replayed into empty copies of its tables while the
/// live tables keep serving, then the copies take the live tables' place in one short transaction.
public enum ProjectionRebuild {
    public enum Mode: Sendable {
        /// The projection is kept by ``ProjectionRunner`` from its checkpoint; the rebuild's checkpoint replaces it.
        case async
        /// The writers update the projection in their append transaction; it has no checkpoint.
        case inline
    }

    /// Rebuilds `projection` and returns how many events were replayed.
    ///
    /// For an inline projection, the switch-over locks the live tables first (every writer must touch its view before
    /// the log, as favorites-service does, or the two could deadlock), then the event table against appends (reads go
    /// on), until the copies have caught up with the last events and been renamed into place; writers waiting
    /// meanwhile then write to the new tables. For an async one it waits for the live runner's batch, catches up only
    /// as far as the runner itself would (transactions that have finished), and hands the rebuilt checkpoint over: the
    /// runner goes on from there, so an event still in flight (a transaction that has not appended yet, such as an
    /// erasure that deletes its view rows first) is applied when it commits, never skipped.
    ///
    /// The whole rebuild runs on one session, which holds the rebuild's advisory lock throughout: a second rebuild of
    /// the same projection (a retried job, a second terminal) fails at once with ``AlreadyRunning`` instead of dropping
    /// the first one's copies and checkpoint mid-replay, which could have swapped in a view with events applied twice.
    @discardableResult
    public static func rebuild(
        _ projection: some Projection, mode: Mode, pool: DatabasePool, batchSize: Int = 1000,
        logger: Logger = Logger(label: "projection.rebuild")
    ) async throws -> Int {
        // The session's statement_timeout bounds each statement; the lease as a whole may take as long as the log needs.
        try await pool.withSession(timeout: .seconds(7 * 86_400)) { connection in
            guard try await connection.query(rebuildLock("pg_try_advisory_lock", projection)).scalar(Bool.self)
            else { throw AlreadyRunning(projection: projection.name) }
            let replayed: Int
            do {
                replayed = try await replay(projection, mode: mode, batchSize: batchSize, logger: logger, on: connection)
            } catch {
                await unlock(projection, on: connection)
                throw error
            }
            await unlock(projection, on: connection)
            return replayed
        }
    }

    /// Another rebuild of this projection holds its lock (see ``rebuild(_:mode:pool:batchSize:logger:)``).
    public struct AlreadyRunning: Error, CustomStringConvertible {
        public let projection: String
        public var description: String {
            "a rebuild of \(projection) is already running; wait for it to end (its lock is held by its database session)"
        }
    }

    /// The class (first key) of the rebuilds' session-level advisory locks. The second is a hash of the schema and the
    /// projection's name: advisory locks are per database, and two schemas may each have a projection of that name.
    /// To find a holder: `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 1380076612`.
    static let rebuildLockClass: Int32 = 0x5242_4C44  // "RBLD" = 1380076612

    /// `function` (taking or releasing an advisory lock) on the rebuild lock of `projection`: one key, written once.
    private static func rebuildLock(_ function: StaticString, _ projection: some Projection) -> SQL {
        """
        SELECT \(raw: function)(\(rebuildLockClass), hashtext(coalesce(current_schema(), '') || '.' || \(projection.name)))
        """
    }

    /// Releases the rebuild's lock. A session that cannot (cancelled, broken) is closed instead: the lock ends with it,
    /// and the pool opens a new one.
    private static func unlock(_ projection: some Projection, on connection: isolated PostgresConnection) async {
        let unlocked = try? await connection.query(rebuildLock("pg_advisory_unlock", projection))
        if unlocked == nil { connection.close() }
    }

    /// The rebuild itself, under its lock: fill the copies, then switch them in.
    private static func replay(
        _ projection: some Projection, mode: Mode, batchSize: Int, logger: Logger,
        on connection: isolated PostgresConnection
    ) async throws -> Int {
        let copies = ProjectionTables(copiesOf: projection.tables, suffix: "_rebuild")
        let checkpoint = projection.name + "#rebuild"
        try await connection.withTransaction { connection in
            for table in projection.tables {
                try await connection.query("DROP TABLE IF EXISTS \(identifier: copies[table])")
                try await connection.query("""
                    CREATE TABLE \(identifier: copies[table]) (LIKE \(identifier: table) INCLUDING ALL)
                    """)
            }
            try await connection.query("DELETE FROM projection_checkpoints WHERE projection = \(checkpoint)")
        }

        // Two steps overlap: while the database applies one batch, the next batch (read first) has its statements
        // worked out on another thread. Only this session writes the copies and their checkpoint, so reading ahead
        // from the last event read is reading from the checkpoint the batch before will have left.
        var replayed = 0
        var analyzedAt = 0
        var events = try await ProjectionBatch.pending(after: .start, limit: batchSize, onlyFinishedTransactions: true,
                                                       on: connection)
        var statements = try projection.statements(for: events, in: copies)
        while let last = events.last {
            let next = events.count < batchSize ? [] : try await ProjectionBatch.pending(
                after: ProjectionCheckpoint(after: last), limit: batchSize, onlyFinishedTransactions: true,
                on: connection)
            async let nextStatements = projection.statements(for: next, in: copies)
            try await connection.withTransaction { [statements] connection in
                try await ProjectionBatch.write(statements, upTo: last, checkpoint: checkpoint, on: connection)
            }
            replayed += events.count
            logger.info("rebuilding", metadata: ["projection": "\(projection.name)", "events": "\(replayed)"])
            // New tables have no statistics, and without them the planner takes a batch's joins against a copy
            // (removals matched by user) for scans of the whole copy: quadratic over the replay. Analysing the
            // copies each time the replay has doubled keeps the plans right at the price of a few ANALYZEs.
            if replayed >= max(2 * analyzedAt, 10 * batchSize) {
                for table in projection.tables {
                    try await connection.query("ANALYZE \(identifier: copies[table])")
                }
                analyzedAt = replayed
            }
            (events, statements) = (next, try await nextStatements)
        }

        replayed += try await connection.withTransaction { connection in
            switch mode {
            case .inline:
                // The writers' gate first: those in flight finish, new ones wait before their first lock on a table,
                // so none can hold the log while waiting for the view below. Then the view: its reads wait too,
                // until the switch commits.
                try await connection.query("SELECT pg_advisory_xact_lock(\(raw: EventStore.switchOverGate), 0)")
                for table in projection.tables {
                    try await connection.query("LOCK TABLE \(identifier: table) IN ACCESS EXCLUSIVE MODE")
                }
                // EXCLUSIVE lets reads through but waits for every transaction that inserted an event to end and
                // holds back new ones: from here on the log cannot change. The inline view has no checkpoint to go
                // on from, so it must take every event now.
                try await connection.query("LOCK TABLE events IN EXCLUSIVE MODE")
            case .async:
                // No lock on the log: it would only wait for transactions that have inserted an event already, not
                // for one that has its id and appends later. The checkpoint handed over covers finished transactions
                // only, as the runner's own batches do.
                try await connection.query("""
                    SELECT pg_advisory_xact_lock(\(ProjectionBatch.projectionLockClass), hashtext(\(projection.name)))
                    """)
            }
            let isAsync = if case .async = mode { true } else { false }
            var applied = 0
            while true {
                let batch = try await ProjectionBatch.apply(projection, checkpoint: checkpoint, tables: copies,
                                                      limit: batchSize, onlyFinishedTransactions: isAsync,
                                                      on: connection)
                applied += batch
                if batch < batchSize { break }
            }
            for table in projection.tables {
                try await swap(table, for: copies[table], on: connection)
            }
            if case .async = mode {
                try await connection.query("DELETE FROM projection_checkpoints WHERE projection = \(projection.name)")
                try await connection.query("""
                    UPDATE projection_checkpoints SET projection = \(projection.name), updated_at = now()
                     WHERE projection = \(checkpoint)
                    """)
            } else {
                try await connection.query("DELETE FROM projection_checkpoints WHERE projection = \(checkpoint)")
            }
            return applied
        }
        logger.notice("projection rebuilt", metadata: ["projection": "\(projection.name)", "events": "\(replayed)"])
        return replayed
    }

    /// Puts `copy` in the place of `table`, under its name and with its indexes' names (and so its constraints'),
    /// so that later migrations find what they expect.
    static func swap(_ table: String, for copy: String, on connection: isolated PostgresConnection) async throws {
        // Each index of the copy, paired with the index of the live table that has the same definition.
        let names = try await connection.query("""
            WITH indexes AS (
                SELECT i.indrelid, c.relname AS name, i.indisunique AS is_unique,
                       substring(pg_get_indexdef(i.indexrelid) FROM ' USING .*') AS definition
                  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 WHERE i.indrelid IN (to_regclass(\(table)), to_regclass(\(copy))))
            SELECT copied.name AS copied, live.name AS live
              FROM indexes copied JOIN indexes live
                ON live.indrelid = to_regclass(\(table)) AND copied.indrelid = to_regclass(\(copy))
               AND live.definition = copied.definition AND live.is_unique = copied.is_unique
            """).rows.map { (try $0.decode(String.self, column: "copied"), try $0.decode(String.self, column: "live")) }
        try await connection.query("DROP TABLE \(identifier: table)")
        try await connection.query("ALTER TABLE \(identifier: copy) RENAME TO \(identifier: table)")
        for (copied, live) in names {
            try await connection.query("ALTER INDEX \(identifier: copied) RENAME TO \(identifier: live)")
        }
    }
}
