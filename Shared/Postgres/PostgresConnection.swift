import CLibpq
import Foundation
import NIOCore
import Synchronization

/// One PostgreSQL session, confined to its own thread.
///
/// libpq blocks the calling thread while it waits for the server, and a `PGconn` must never be used by two threads
/// at once. So each connection is an actor whose executor is an event loop reserved for it: statements run there,
/// never on Swift's cooperative pool (two threads on this machine, which two slow queries would stall).
///
/// Statement methods are synchronous inside the actor, so a transaction body (`isolated PostgresConnection`) runs
/// start to finish with nothing interleaved, and awaiting from outside is one hop per call.
public actor PostgresConnection {
    /// The `PGconn *`; `nil` once closed. Never leaves the actor.
    private var handle: OpaquePointer?
    /// The thread this session runs on.
    public nonisolated let loop: any EventLoop
    /// Statement text → server-side prepared statement name, for this session.
    private var preparedStatements: [String: String] = [:]
    /// Names are never reused: a statement dropped from the cache may still exist on the server.
    private var preparedCount = 0
    /// The `BEGIN` of ``withTransaction(isolation:_:)``, not sent yet: it travels with the body's first statement.
    private var pendingBegin: SQL?
    /// ``commit(with:prepare:)`` ended the transaction of the running ``withTransaction(isolation:_:)`` body.
    private var committedEarly = false
    /// The only state other threads read or write: cancellation and the reusability check happen from outside.
    private let shared = Mutex(SharedState())

    /// Prepared statements kept per session; past this, statements run unprepared rather than growing without bound.
    static let maxPreparedStatements = 256

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }

    /// Opens a session on `loop`. The connect (DNS, TCP, TLS, authentication) blocks that thread, not the caller's.
    public init(configuration: ConnectionConfiguration, loop: any EventLoop) async throws {
        self.loop = loop
        self.handle = nil
        // Every stored property is set: from here on an async actor initializer runs on the actor's executor.
        let keywords = try configuration.keywords()
        // Both arrays end with a NULL entry, as libpq requires.
        let connection = try withCStrings(keywords.map(\.0) + [nil]) { names in
            try withCStrings(keywords.map(\.1) + [nil]) { values in PQconnectdbParams(names, values, 0) }
        }
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let error = PostgresError(
                kind: .connectFailed,
                message: connection.flatMap { PQerrorMessage($0).map { String(cString: $0) } }?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "out of memory"
            )
            PQfinish(connection)
            throw error
        }
        // Notices and warnings would otherwise go to stderr, outside our structured logs.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
        let cancel = UInt(bitPattern: PQgetCancel(connection))
        let socket = PQsocket(connection)
        shared.withLock { $0 = SharedState(cancel: cancel, socket: socket, idle: true) }
    }

    /// Whether the pool may hand this session out again: open, not inside a transaction, not running a statement, and
    /// nothing unread on its socket (a session the server ended has an EOF or a termination message waiting).
    /// Callable from any thread without a hop.
    public nonisolated var isReusable: Bool {
        shared.withLock { state in
            guard state.idle, !state.running, !state.closed else { return false }
            var descriptor = pollfd(fd: state.socket, events: Int16(POLLIN), revents: 0)
            return poll(&descriptor, 1, 0) == 0
        }
    }

    /// Whether the session ended its last statement cleanly outside a transaction. No syscall: checked on release,
    /// while ``isReusable`` (which also looks at the socket) is checked on lease.
    nonisolated var isIdle: Bool {
        shared.withLock { $0.idle && !$0.running && !$0.closed }
    }

    /// Asks the server to cancel the statement running now, if any. Any thread; blocks for one round trip.
    /// The statement then fails with SQLSTATE 57014 and the session stays usable.
    public nonisolated func cancelRunningStatement() {
        shared.withLock { state in
            guard state.running, let cancel = OpaquePointer(bitPattern: state.cancel) else { return }
            var error = [CChar](repeating: 0, count: 256)
            _ = PQcancel(cancel, &error, Int32(error.count))
        }
    }

    /// Marks the current lease as out of time: the running statement is cancelled and every later statement of the
    /// lease fails with ``PostgresError/Kind/timeout``.
    nonisolated func expireLease() {
        shared.withLock { $0.timedOut = true }
        cancelRunningStatement()
    }

    /// Starts a lease: whatever an earlier lease's deadline did no longer applies.
    nonisolated func beginLease() {
        shared.withLock { $0.timedOut = false }
    }

    /// Closes the session. Idempotent.
    public func close() {
        guard let connection = handle else { return }
        handle = nil
        let cancel = shared.withLock { state in
            defer { state = SharedState(closed: true) }
            return state.cancel
        }
        PQfreeCancel(OpaquePointer(bitPattern: cancel))
        PQfinish(connection)
    }

    // MARK: Statements

    /// Runs one statement with bound parameters. With `prepare: true` the statement is parsed and planned once per
    /// session and reused (for hot queries; the text must be a constant for this to pay off).
    @discardableResult
    public func query(_ sql: SQL, prepare: Bool = false) throws -> QueryResult {
        if pendingBegin != nil { return try pipeline([sql], prepare: prepare)[0] }
        if prepare, let name = try preparedName(for: sql) {
            do {
                return try run { connection in
                    try withCStrings(sql.parameters) { values in
                        PQexecPrepared(connection, name, Int32(sql.parameters.count), values, nil, nil, 0)
                    }
                }
            } catch let error as PostgresError where error.invalidatesPreparedStatement {
                // "cached plan must not change result type" (a migration changed a table under a `SELECT *`), or a
                // statement the server no longer knows: forget it, so the next call prepares afresh.
                preparedStatements[sql.text] = nil
                if let connection = handle, PQtransactionStatus(connection) == PQTRANS_IDLE {
                    PQclear(PQexec(connection, "DEALLOCATE " + SQL.quoteIdentifier(name)))
                }
                throw error
            }
        }
        return try run { connection in
            try withCStrings(sql.parameters) { values in
                PQexecParams(connection, sql.text, Int32(sql.parameters.count), nil, values, nil, nil, 0)
            }
        }
    }

    /// Runs several statements without parameters in one round trip (simple query protocol): migrations, set-up.
    /// Returns the last statement's result.
    @discardableResult
    public func execute(_ script: SQLScript) throws -> QueryResult {
        if pendingBegin != nil { _ = try pipeline([]) }  // the simple protocol cannot join a pipeline: BEGIN first
        return try run { PQexec($0, script.text) }
    }

    /// Runs `body` in a transaction on this session: committed when it returns, rolled back when it throws (also on
    /// cancellation and timeouts, which make the next statement throw). Nothing else runs on the session meanwhile.
    /// `BEGIN` travels with the body's first statement, and the body may end with ``commit(with:prepare:)``, so a
    /// read-then-write command costs two round trips.
    public func withTransaction<Value: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        _ body: @Sendable (isolated PostgresConnection) throws -> Value
    ) throws -> Value {
        pendingBegin = isolation.beginStatement
        committedEarly = false
        defer {
            pendingBegin = nil
            committedEarly = false
        }
        do {
            let value = try body(self)
            if pendingBegin != nil || committedEarly { return value }  // nothing sent, or already committed
            // After an error inside the transaction (even one `body` caught), COMMIT "succeeds" with status ROLLBACK.
            guard let connection = handle, PQtransactionStatus(connection) == PQTRANS_INTRANS else {
                throw PostgresError.client("the transaction failed earlier and was rolled back")
            }
            try query("COMMIT")
            return value
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Sends `statements`, then `COMMIT`, in one round trip: the last step of a ``withTransaction(isolation:_:)``
    /// body, which must return right after (any later statement throws). If one fails, the transaction applies
    /// nothing and the error is thrown.
    @discardableResult
    public func commit(with statements: [SQL], prepare: Bool = false) throws -> [QueryResult] {
        guard !committedEarly, pendingBegin != nil || handle.map({ PQtransactionStatus($0) == PQTRANS_INTRANS }) == true
        else { throw PostgresError.client("commit(with:) needs an open transaction of withTransaction") }
        let results = try pipelined(statements.map { ($0, prepare) } + [("COMMIT", false)])
        committedEarly = true
        return Array(results.dropLast())
    }

    /// Runs `body` on this session's thread, its statements one after another with nothing interleaved and no hop
    /// between them, each in its own implicit transaction (see ``withTransaction(isolation:_:)`` for one transaction).
    public func perform<Value: Sendable>(_ body: @Sendable (isolated PostgresConnection) throws -> Value) throws -> Value {
        try body(self)
    }

    /// Sends all statements before reading any result (libpq pipeline mode): one network round trip for the lot.
    /// The server still runs them one after another, each with its own snapshot (so a statement sees what an earlier
    /// one waited for, such as a lock). Without an explicit `BEGIN` they run as one implicit transaction: if one
    /// fails, none is applied, and the first error is thrown. Inside a transaction, a failure fails the transaction.
    /// With `prepare: true` each statement is prepared once per session, as ``query(_:prepare:)`` does.
    public func pipeline(_ statements: [SQL], prepare: Bool = false) throws -> [QueryResult] {
        try pipelined(statements.map { ($0, prepare) })
    }

    /// ``pipeline(_:prepare:)`` with a choice per statement, and the pending `BEGIN` of a transaction in front.
    private func pipelined(_ requested: [(sql: SQL, prepare: Bool)]) throws -> [QueryResult] {
        var batch = requested
        let beginning = pendingBegin != nil
        if let begin = pendingBegin {
            batch.insert((begin, false), at: 0)
            pendingBegin = nil
        }
        guard !batch.isEmpty else { return [] }
        // Preparing is a round trip of its own, done outside the pipeline on first use only.
        let names = try batch.map { $0.prepare ? try preparedName(for: $0.sql) : nil }
        let connection = try begin()
        defer { settle(connection) }
        guard PQenterPipelineMode(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
        defer { PQexitPipelineMode(connection) }
        for ((sql, _), name) in zip(batch, names) {
            let sent = try withCStrings(sql.parameters) { values in
                if let name {
                    PQsendQueryPrepared(connection, name, Int32(sql.parameters.count), values, nil, nil, 0)
                } else {
                    PQsendQueryParams(connection, sql.text, Int32(sql.parameters.count), nil, values, nil, nil, 0)
                }
            }
            guard sent == 1 else { throw PostgresError(result: nil, connection: connection) }
        }
        guard PQpipelineSync(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
        var results: [Result<QueryResult, any Error>] = []
        for _ in batch {
            results.append(Result { try self.consume(PQgetResult(connection), connection) })
            while let extra = PQgetResult(connection) { PQclear(extra) }  // each statement's results end with NULL
        }
        while let sync = PQgetResult(connection) {  // PGRES_PIPELINE_SYNC (and NULL after it)
            let status = PQresultStatus(sync)
            PQclear(sync)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        for case .failure(let error as PostgresError) in results where error.invalidatesPreparedStatement {
            // As in query(_:prepare:): forget them, so the next use prepares afresh (names are never reused).
            for (sql, _) in batch { preparedStatements[sql.text] = nil }
        }
        // The first failure in order is the cause; the statements after it were skipped.
        let values = try results.map { try $0.get() }
        return Array(values.dropFirst(beginning ? 1 : 0))
    }

    // MARK: LISTEN

    /// Listens on `channels` until the task is cancelled or the session breaks (then it throws), calling `deliver`
    /// for each notification. Blocks this session's thread, which is why listeners get a connection of their own.
    func listen(
        to channels: [String],
        onListening: () -> Void,
        deliver: (PostgresNotification) -> Void
    ) throws {
        for channel in channels {
            try query("LISTEN \(identifier: channel)")
        }
        onListening()
        let connection = try begin()
        defer { settle(connection) }
        var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
        while !Task.isCancelled {
            // Wake at least every 250 ms to notice cancellation.
            let ready = poll(&descriptor, 1, 250)
            guard ready >= 0 || errno == EINTR else { throw PostgresError(result: nil, connection: connection) }
            guard PQconsumeInput(connection) == 1, PQstatus(connection) == CONNECTION_OK else {
                throw PostgresError(kind: .connectionLost, message: "the listening session was lost")
            }
            while let notify = PQnotifies(connection) {
                let notification = notify.pointee
                deliver(PostgresNotification(
                    channel: String(cString: notification.relname),
                    payload: String(cString: notification.extra),
                    senderProcessID: notification.be_pid
                ))
                PQfreemem(notify)
            }
        }
    }

    // MARK: Internals

    /// The prepared statement name for `sql`, preparing it on first use; `nil` when the cache is full.
    private func preparedName(for sql: SQL) throws -> String? {
        if let name = preparedStatements[sql.text] { return name }
        guard preparedStatements.count < Self.maxPreparedStatements else { return nil }
        preparedCount += 1
        let name = "fm_\(preparedCount)"
        _ = try run { PQprepare($0, name, sql.text, Int32(sql.parameters.count), nil) }
        preparedStatements[sql.text] = name
        return name
    }

    /// Every statement goes through here: the session must be open, the lease still in time, the task not cancelled;
    /// the running flag lets another thread cancel the statement meanwhile.
    private func run(_ send: (OpaquePointer) throws -> OpaquePointer?) throws -> QueryResult {
        let connection = try begin()
        defer { settle(connection) }
        return try consume(send(connection), connection)
    }

    private func begin() throws -> OpaquePointer {
        guard let connection = handle else { throw PostgresError(kind: .connectionLost, message: "connection closed") }
        if committedEarly {
            throw PostgresError.client("the transaction ended with commit(with:); a statement after it would run outside")
        }
        if Task.isCancelled { throw CancellationError() }
        try shared.withLock { state in
            if state.timedOut { throw PostgresError(kind: .timeout, message: "the database lease ran out of time") }
            state.running = true
        }
        return connection
    }

    private func settle(_ connection: OpaquePointer) {
        let idle = PQstatus(connection) == CONNECTION_OK && PQtransactionStatus(connection) == PQTRANS_IDLE
        shared.withLock {
            $0.running = false
            $0.idle = idle
        }
    }

    /// Copies a result out of libpq and frees it; a failed result becomes a ``PostgresError``.
    private func consume(_ result: OpaquePointer?, _ connection: OpaquePointer) throws -> QueryResult {
        defer { PQclear(result) }
        guard let result else { throw PostgresError(result: nil, connection: connection) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            break
        default:
            let error = PostgresError(result: result, connection: connection)
            if error.isQueryCancelled, shared.withLock({ $0.timedOut }) {
                throw PostgresError(kind: .timeout, sqlState: error.sqlState, message: "the statement ran out of time")
            }
            throw error
        }
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var rows: [[String?]] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<Int32(columnCount) {
                values.append(PQgetisnull(result, row, column) == 1
                    ? nil : String(cString: PQgetvalue(result, row, column)))
            }
            rows.append(values)
        }
        let affected = PQcmdTuples(result).map { Int(String(cString: $0)) ?? 0 } ?? 0
        return QueryResult(columns: columns, values: rows, affectedRows: affected)
    }

    private func rollbackQuietly() {
        guard let connection = handle, PQstatus(connection) == CONNECTION_OK,
              PQtransactionStatus(connection) != PQTRANS_IDLE
        else { return }
        PQclear(PQexec(connection, "ROLLBACK"))
        settle(connection)
    }
}

/// What other threads may touch, guarded by a mutex.
struct SharedState: Sendable {
    var cancel: UInt = 0
    var socket: Int32 = -1
    var idle = false
    var running = false
    var closed = false
    var timedOut = false
}

/// Transaction isolation levels.
public enum IsolationLevel: Sendable {
    case readCommitted, repeatableRead, serializable

    var beginStatement: SQL {
        switch self {
        case .readCommitted: "BEGIN"
        case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
        case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
        }
    }
}

/// A NOTIFY received by a listener.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    public let senderProcessID: Int32
}

/// `[String?]` as a `const char * const *` valid inside `body`; `nil` becomes a NULL pointer (SQL NULL).
func withCStrings<Result>(
    _ strings: [String?],
    _ body: (UnsafePointer<UnsafePointer<CChar>?>?) throws -> Result
) throws -> Result {
    // A NUL would silently truncate the C string (and PostgreSQL text cannot hold one anyway).
    guard strings.allSatisfy({ $0?.utf8.contains(0) != true }) else {
        throw PostgresError.client("a parameter contains a NUL character, which PostgreSQL text cannot hold")
    }
    let copies = strings.map { $0.flatMap { UnsafePointer(strdup($0)) } }
    defer { for copy in copies { free(UnsafeMutablePointer(mutating: copy)) } }
    return try copies.withUnsafeBufferPointer { try body($0.baseAddress) }
}
