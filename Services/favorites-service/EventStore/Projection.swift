import Foundation
import Postgres

/// A view computed from the log, in tables of its own.
///
/// The same `statements` serve the live projection and a rebuild: they write to whichever tables they are given.
/// Working them out touches no database, so a rebuild works out the next batch's while the database applies this one.
public protocol Projection: Sendable {
    /// Names the projection's checkpoint and its lock.
    var name: String { get }
    /// The tables it writes. A rebuild fills empty copies of them, then swaps the copies in.
    var tables: [String] { get }
    /// The statements that apply `events`, in log order, to `tables`; they run in order in the caller's transaction.
    func statements(for events: [RecordedEvent], in tables: ProjectionTables) throws -> [SQL]
}

/// The tables a projection writes this time: its live tables, or a rebuild's copies of them.
public struct ProjectionTables: Sendable {
    private let names: [String: String]

    /// The live tables.
    public init() { names = [:] }

    init(copiesOf tables: [String], suffix: String) {
        names = Dictionary(uniqueKeysWithValues: tables.map { ($0, $0 + suffix) })
    }

    /// The table to write for the projection's table `table`.
    public subscript(_ table: String) -> String { names[table] ?? table }
}

/// How far a projection has read the log: the last event it applied, in (transaction id, position) order.
public struct ProjectionCheckpoint: Sendable, Equatable {
    public var transactionID: Int64
    public var position: Int64

    public static let start = ProjectionCheckpoint(transactionID: 0, position: 0)

    /// Just after `event`.
    init(after event: RecordedEvent) {
        self.init(transactionID: event.transactionID, position: event.position)
    }

    init(transactionID: Int64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }
}

/// One step of an async projection: a batch of events applied and the checkpoint moved, in one transaction.
///
/// Events are read in (transaction id, position) order, and only from transactions older than every transaction
/// still running. Positions are handed out when a transaction inserts, not when it commits, so a later position can
/// commit first; a reader that went by position alone would move past the earlier one and never see it. Reading
/// behind the oldest running transaction never skips an event, however long a transaction stays open: the
/// projection waits for it (its lag grows) rather than guessing on a timer. Within one stream, transaction ids follow
/// versions (see ``EventStore/lock(_:on:)``).
public enum ProjectionBatch {
    public enum Outcome: Sendable, Equatable {
        /// This many events were applied and the checkpoint moved past them.
        case applied(Int)
        /// Nothing new (or only events of transactions still running).
        case upToDate
        /// Another instance (on this or another replica) is applying a batch of this projection right now.
        case busy
    }

    /// Applies the next batch of at most `limit` events, unless another instance holds the projection's lock.
    public static func run(_ projection: some Projection, limit: Int, pool: DatabasePool) async throws -> Outcome {
        try await pool.withTransaction { connection in
            guard try await connection.query("""
                SELECT pg_try_advisory_xact_lock(\(projectionLockClass), hashtext(\(projection.name)))
                """, prepare: true).scalar(Bool.self)
            else { return .busy }
            let applied = try await apply(projection, checkpoint: projection.name, tables: ProjectionTables(), limit: limit,
                                    on: connection)
            return applied == 0 ? .upToDate : .applied(applied)
        }
    }

    /// The class (first key) of the projections' advisory locks.
    static let projectionLockClass: Int32 = 0x5052_4A53  // "PRJS"

    /// Reads the events after checkpoint `name`, applies them to `tables` and moves the checkpoint, all in the
    /// caller's transaction. `onlyFinishedTransactions: false` is for a caller that has stopped every writer (a
    /// rebuild's switch-over). Returns how many events were applied.
    static func apply(
        _ projection: some Projection, checkpoint name: String, tables: ProjectionTables, limit: Int,
        onlyFinishedTransactions: Bool = true, on connection: isolated PostgresConnection
    ) async throws -> Int {
        // Reads first: the transaction must not hold an id of its own yet, or it would hold back its own reads.
        let checkpoint = try await Self.checkpoint(name, on: connection)
        let events = try await pending(after: checkpoint, limit: limit, onlyFinishedTransactions: onlyFinishedTransactions,
                                 on: connection)
        guard let last = events.last else { return 0 }
        try await write(projection.statements(for: events, in: tables), upTo: last, checkpoint: name, on: connection)
        return events.count
    }

    /// Runs a batch's `statements` and moves checkpoint `name` to `last`, the batch's last event, in the caller's
    /// transaction.
    static func write(_ statements: [SQL], upTo last: RecordedEvent, checkpoint name: String,
                      on connection: isolated PostgresConnection) async throws {
        try await connection.pipeline(statements + ["""
            INSERT INTO projection_checkpoints (projection, transaction_id, position)
            VALUES (\(name), \(last.transactionID)::xid8, \(last.position))
            ON CONFLICT (projection) DO UPDATE
               SET transaction_id = excluded.transaction_id, position = excluded.position, updated_at = now()
            """], prepare: false)
    }

    static func checkpoint(_ name: String, on connection: isolated PostgresConnection) async throws -> ProjectionCheckpoint {
        guard let row = try await connection.query("""
            SELECT transaction_id::text AS transaction_id, position
              FROM projection_checkpoints WHERE projection = \(name)
            """, prepare: true).rows.first
        else { return .start }
        return ProjectionCheckpoint(transactionID: try row.decode(Int64.self, column: "transaction_id"),
                                    position: try row.decode(Int64.self, column: "position"))
    }

    /// The events after `checkpoint`, in (transaction id, position) order.
    static func pending(after checkpoint: ProjectionCheckpoint, limit: Int, onlyFinishedTransactions: Bool,
                        on connection: isolated PostgresConnection) async throws -> [RecordedEvent] {
        let result = if onlyFinishedTransactions {
            try await connection.query("""
                SELECT \(raw: EventStore.recordedColumns)
                  FROM events
                 WHERE (transaction_id, position) > (\(checkpoint.transactionID)::xid8, \(checkpoint.position))
                   AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                 ORDER BY transaction_id, position LIMIT \(limit)
                """, prepare: true)
        } else {
            try await connection.query("""
                SELECT \(raw: EventStore.recordedColumns)
                  FROM events
                 WHERE (transaction_id, position) > (\(checkpoint.transactionID)::xid8, \(checkpoint.position))
                 ORDER BY transaction_id, position LIMIT \(limit)
                """)
        }
        return try result.rows.map(EventStore.recorded)
    }

    /// How far behind the log a projection is: events not applied yet (counted up to `countLimit`) and the age of the
    /// oldest of them.
    public static func lag(of projection: String, countLimit: Int = 100_000, pool: DatabasePool) async throws
        -> (events: Int, oldest: Date?)
    {
        try await pool.withSession { connection in
            try await connection.lag(of: projection, countLimit: countLimit)
        }
    }
}

extension PostgresConnection {
    fileprivate func lag(of projection: String, countLimit: Int) async throws -> (events: Int, oldest: Date?) {
        let checkpoint = try await ProjectionBatch.checkpoint(projection, on: self)
        let lag = try await query("""
            SELECT count(*) AS events, min(recorded_at) AS oldest FROM (
                SELECT recorded_at FROM events
                 WHERE (transaction_id, position) > (\(checkpoint.transactionID)::xid8, \(checkpoint.position))
                 ORDER BY transaction_id, position LIMIT \(countLimit)) AS pending
            """, prepare: true).single()
        return (try lag.decode(Int.self, column: "events"), try lag.decode(Date?.self, column: "oldest"))
    }
}
