import CLibpq
import Foundation
import Locking

/// One PostgreSQL session.
///
/// libpq runs in non-blocking mode: sending a statement and reading its answer never block the calling thread, and
/// waiting for the server is an `await` on one of the process's ``SocketReactor``s. So sessions never stall the thread they
/// run on and need no thread of their own. They run wherever their caller's task runs: on Swift's cooperative pool a
/// statement costs one hand-off between threads (the reactor's wake-up when the answer arrives), and on the reactor
/// itself (a task that prefers it as its executor, as a lease's body does) none. Only connecting blocks (DNS, TCP,
/// TLS, authentication): it runs on a thread started for it.
///
/// The actor serialises the session: a `PGconn` must never be used by two threads at once, and a transaction body
/// (`isolated PostgresConnection`) awaits its statements without anything else running on the session meanwhile
/// (the pool leases a session to one caller at a time).
public actor PostgresConnection {
    /// The `PGconn *`; `nil` once closed. Never leaves the actor.
    private var handle: OpaquePointer?
    /// The session's socket, watched by ``reactor``.
    private let socket: Int32
    /// The reactor's registration of ``socket``.
    private let registration: UInt64
    /// Wakes the session's waits; the pool runs a lease's body on it.
    let reactor: SocketReactor
    /// Statement text → server-side prepared statement name, for this session.
    private var preparedStatements: [String: String] = [:]
    /// Names are never reused: a statement dropped from the cache may still exist on the server.
    private var preparedCount = 0
    /// Prepared statements the server refused after a schema change, dropped from the cache but still held by the
    /// server: deallocated before the next statement that runs outside a transaction (inside one, the refusal has
    /// aborted it, and a `DEALLOCATE` would fail too).
    private var staleStatements: [String] = []
    /// The `BEGIN` of ``withTransaction(isolation:_:)``, not sent yet: it travels with the body's first statement.
    private var pendingBegin: SQL?
    /// ``commit(with:prepare:)`` ended the transaction of the running ``withTransaction(isolation:_:)`` body.
    private var committedEarly = false
    /// libpq read from the socket since the current statement was sent, and may have left more there: the reactor
    /// only reports input that arrives after a wait, so the socket must then be checked before waiting.
    private var readSinceSend = false
    /// The only state other threads read or write: cancellation and the reusability check happen from outside.
    private let shared = Locked(SharedState())

    /// Prepared statements kept per session; past this, statements run unprepared rather than growing without bound.
    static let maxPreparedStatements = 256

    /// Opens a session. The connect blocks a thread started for it, never the caller's.
    public init(configuration: ConnectionConfiguration) async throws {
        try await self.init(configuration: configuration, reactor: nil)
    }

    /// Opens a session driven by `reactor`, or by the one ``SocketReactor/placeNewSession(_:)`` picks (tests put
    /// sessions on one reactor on purpose).
    init(configuration: ConnectionConfiguration, reactor: SocketReactor?) async throws {
        let keywords = try configuration.keywords()
        let connection = try await Self.connect(keywords).get()
        // From here on libpq never blocks: sends go to its buffer, reads take what has arrived.
        guard PQsetnonblocking(connection, 1) == 0 else {
            let error = PostgresError(result: nil, connection: connection)
            PQfinish(connection)
            throw error
        }
        // Notices and warnings would otherwise go to stderr, outside our structured logs.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        let socket = PQsocket(connection)
        do {
            if let reactor {
                (self.reactor, registration) = (reactor, try reactor.register(socket))
            } else {
                (self.reactor, registration) = try SocketReactor.placeNewSession(socket)
            }
        } catch {
            PQfinish(connection)
            throw error
        }
        handle = connection
        self.socket = socket
        let cancel = CancelRequest(connection)
        shared.withLock { $0 = SharedState(cancel: cancel, socket: socket, idle: true) }
    }

    /// `PQconnectdbParams` on a thread of its own; the `PGconn *` crosses back as an address.
    private static func connect(_ keywords: [(String, String)]) async -> Result<OpaquePointer, PostgresError> {
        let address = await withCheckedContinuation { (continuation: CheckedContinuation<Result<UInt, PostgresError>, Never>) in
            runOnThreadOfItsOwn(named: "postgres-connect") {
                continuation.resume(returning: Result {
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
                    return UInt(bitPattern: connection)
                }.mapError { $0 as? PostgresError ?? .client("\($0)") })
            }
        }
        return address.map { OpaquePointer(bitPattern: $0)! }
    }

    /// Whether the pool may hand this session out again: open, not inside a transaction, not running a statement, and
    /// nothing unread on its socket (a session the server ended has an EOF or a termination message waiting).
    /// Callable from any thread without a hop.
    public nonisolated var isReusable: Bool {
        shared.withLock { state in
            guard state.idle, !state.running, !state.closed, !state.cancelInFlight else { return false }
            // Only look at the socket if the reactor saw it become readable since the last statement.
            guard reactor.mayHaveInput(on: state.socket) else { return true }
            var descriptor = pollfd(fd: state.socket, events: Int16(POLLIN), revents: 0)
            return poll(&descriptor, 1, 0) == 0
        }
    }

    /// Asks the server to cancel the statement running now, if any. Any thread; returns at once.
    /// The statement then fails with SQLSTATE 57014 and the session stays usable.
    ///
    /// `PQcancel` opens a connection of its own and waits until the server has acted, which takes a round trip, or
    /// minutes when the server cannot be reached. So it runs on a thread started for it: never on the caller's (a
    /// task's cancellation handler, the pool's reaper), and never under the session's lock, which the reactor takes.
    /// Until it is done, the session is not handed out again (``endLease()``, ``isReusable``): a cancel that reached
    /// the server late would otherwise stop the next lease's statement.
    public nonisolated func cancelRunningStatement() {
        send(shared.withLock { $0.claimCancel() })
    }

    /// Sends a claimed cancel request (see ``SharedState/claimCancel()``) from a thread of its own.
    private nonisolated func send(_ request: CancelRequest?) {
        guard let request else { return }
        Self.runOnThreadOfItsOwn(named: "postgres-cancel") { [shared] in
            request.send()
            shared.withLock { $0.cancelInFlight = false }
        }
    }

    /// Runs `work` on a thread started for it: the libpq calls that block (connecting, cancelling) never run on a
    /// caller's thread or the reactor's.
    private static func runOnThreadOfItsOwn(named name: String, _ work: @escaping @Sendable () -> Void) {
        let thread = Thread(block: work)
        thread.name = name
        thread.start()
    }

    /// Starts a lease that must end by `deadline`; whatever an earlier lease's deadline did no longer applies.
    nonisolated func beginLease(deadline: ContinuousClock.Instant?) {
        shared.withLock { state in
            state.timedOut = false
            state.leaseDeadline = deadline
        }
    }

    /// How a lease left the session.
    enum LeaseEnd {
        /// It ended its last statement cleanly, outside a transaction.
        case reusable
        /// As `reusable`, but a cancel request is still on its way to the server.
        case cancelInFlight
        /// Closed, broken, inside a transaction or amid a statement.
        case unusable
    }

    /// Ends the lease. No system call: this is checked on release, while ``isReusable`` (which may look at the socket)
    /// is checked on lease.
    nonisolated func endLease() -> LeaseEnd {
        shared.withLock { state in
            state.leaseDeadline = nil
            guard state.idle, !state.running, !state.closed else { return .unusable }
            return state.cancelInFlight ? .cancelInFlight : .reusable
        }
    }

    /// Waits, up to `limit`, until the cancel request on its way has reached the server (usually well under a
    /// millisecond after the cancelled statement's error), and tells whether it did.
    nonisolated func cancelDelivered(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while shared.withLock(\.cancelInFlight) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// If the lease is past its deadline, marks it out of time: the running statement is cancelled and every later
    /// statement of the lease fails with ``PostgresError/Kind/timeout``. The pool calls this every few milliseconds
    /// while the lease lasts, so a cancel that reached the server before its statement is sent again.
    nonisolated func expireLeaseIfOverdue(now: ContinuousClock.Instant) {
        // One locked step: with two, the lease could end and the next begin a statement in between, which the cancel
        // would then stop.
        send(shared.withLock { state -> CancelRequest? in
            guard let deadline = state.leaseDeadline, deadline < now else { return nil }
            state.timedOut = true
            return state.claimCancel()
        })
    }

    /// Closes the session. Idempotent.
    public func close() {
        guard let connection = handle else { return }
        handle = nil
        // A cancel still on its way keeps its own reference to the request, which is freed after it.
        shared.withLock { $0 = SharedState(closed: true) }
        reactor.deregister(socket, token: registration)  // before PQfinish closes the descriptor, whose number may then be reused
        PQfinish(connection)
    }

    // MARK: Statements

    /// Runs one statement with bound parameters. With `prepare: true` the statement is parsed and planned once per
    /// session and reused (for hot queries; the text must be a constant for this to pay off).
    @discardableResult
    public func query(_ sql: SQL, prepare: Bool = false) async throws -> QueryResult {
        if !staleStatements.isEmpty { await deallocateStaleStatements() }
        if pendingBegin != nil { return try await pipeline([sql], prepare: prepare)[0] }
        if prepare, let name = try await preparedName(for: sql) {
            do {
                return try await exchange { connection in
                    try withCStrings(sql.parameters) { values in
                        PQsendQueryPrepared(connection, name, Int32(sql.parameters.count), values, nil, nil, 0)
                    }
                }
            } catch let error as PostgresError where error.invalidatesPreparedStatement {
                forget(sql, preparedAs: name, refusedWith: error)
                throw error
            }
        }
        return try await exchange { connection in
            try withCStrings(sql.parameters) { values in
                PQsendQueryParams(connection, sql.text, Int32(sql.parameters.count), nil, values, nil, nil, 0)
            }
        }
    }

    /// Runs several statements without parameters in one round trip (simple query protocol): migrations, set-up.
    /// Returns the last statement's result.
    @discardableResult
    public func execute(_ script: SQLScript) async throws -> QueryResult {
        if !staleStatements.isEmpty { await deallocateStaleStatements() }
        if pendingBegin != nil { _ = try await pipeline([]) }  // the simple protocol cannot join a pipeline: BEGIN first
        return try await exchange { PQsendQuery($0, script.text) }
    }

    /// Runs `body` in a transaction on this session: committed when it returns, rolled back when it throws (also on
    /// cancellation and timeouts, which make the next statement throw). Nothing else runs on the session meanwhile.
    /// `BEGIN` travels with the body's first statement, and the body may end with ``commit(with:prepare:)``, so a
    /// read-then-write command costs two round trips.
    public func withTransaction<Value: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        _ body: @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> Value {
        pendingBegin = isolation.beginStatement
        committedEarly = false
        defer {
            pendingBegin = nil
            committedEarly = false
        }
        do {
            let value = try await body(self)
            if pendingBegin != nil || committedEarly { return value }  // nothing sent, or already committed
            // After an error inside the transaction (even one `body` caught), COMMIT "succeeds" with status ROLLBACK.
            guard let connection = handle, PQtransactionStatus(connection) == PQTRANS_INTRANS else {
                throw PostgresError.client("the transaction failed earlier and was rolled back")
            }
            try await query("COMMIT")
            return value
        } catch {
            await rollbackQuietly()
            throw error
        }
    }

    /// Sends `statements`, then `COMMIT`, in one round trip: the last step of a ``withTransaction(isolation:_:)``
    /// body, which must return right after (any later statement throws). If one fails, the transaction applies
    /// nothing and the error is thrown.
    @discardableResult
    public func commit(with statements: [SQL], prepare: Bool = false) async throws -> [QueryResult] {
        guard !committedEarly, pendingBegin != nil || handle.map({ PQtransactionStatus($0) == PQTRANS_INTRANS }) == true
        else { throw PostgresError.client("commit(with:) needs an open transaction of withTransaction") }
        let results = try await pipelined(statements.map { ($0, prepare) } + [("COMMIT", false)])
        committedEarly = true
        return Array(results.dropLast())
    }

    /// Runs `body` with this session, its statements one after another with nothing interleaved, each in its own
    /// implicit transaction (see ``withTransaction(isolation:_:)`` for one transaction).
    public func perform<Value: Sendable>(
        _ body: @Sendable (isolated PostgresConnection) async throws -> Value
    ) async throws -> Value {
        try await body(self)
    }

    /// Sends all statements before reading any result (libpq pipeline mode): one network round trip for the lot.
    /// The server still runs them one after another, each with its own snapshot (so a statement sees what an earlier
    /// one waited for, such as a lock). Without an explicit `BEGIN` they run as one implicit transaction: if one
    /// fails, none is applied, and the first error is thrown. Inside a transaction, a failure fails the transaction.
    /// With `prepare: true` each statement is prepared once per session, as ``query(_:prepare:)`` does.
    @discardableResult
    public func pipeline(_ statements: [SQL], prepare: Bool = false) async throws -> [QueryResult] {
        try await pipelined(statements.map { ($0, prepare) })
    }

    /// ``pipeline(_:prepare:)`` with a choice per statement, and the pending `BEGIN` of a transaction in front.
    private func pipelined(_ requested: [(sql: SQL, prepare: Bool)]) async throws -> [QueryResult] {
        // Everything that can fail before the pipeline is sent, first: a NUL in a parameter, and preparing (a round
        // trip of its own, on first use only). The pending `BEGIN` is taken only after, so that when either throws
        // (and the body catches it) the transaction's next statement still carries it; and no error leaves statements
        // queued in pipeline mode without their sync.
        for (sql, _) in requested { try requireNoNUL(sql.parameters) }
        if !staleStatements.isEmpty { await deallocateStaleStatements() }
        var names: [String?] = []
        for (sql, prepare) in requested { names.append(prepare ? try await preparedName(for: sql) : nil) }
        var batch = requested
        let beginning = pendingBegin != nil
        if let begin = pendingBegin {
            batch.insert((begin, false), at: 0)
            names.insert(nil, at: 0)
            pendingBegin = nil
        }
        guard !batch.isEmpty else { return [] }
        let connection = try begin()
        defer { settle(connection) }
        guard PQenterPipelineMode(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
        defer { if handle == connection { PQexitPipelineMode(connection) } }
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
        try await flush(connection)
        var results: [Result<QueryResult, any Error>] = []
        for _ in batch {
            let first = try await nextResult(connection)
            results.append(Result { try self.consume(first, connection) })
            while let extra = try await nextResult(connection) { PQclear(extra) }  // each statement's results end with NULL
        }
        while let sync = try await nextResult(connection) {  // PGRES_PIPELINE_SYNC
            let status = PQresultStatus(sync)
            PQclear(sync)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        for (((sql, _), name), result) in zip(zip(batch, names), results) {
            if let name, case .failure(let error as PostgresError) = result, error.invalidatesPreparedStatement {
                forget(sql, preparedAs: name, refusedWith: error)
            }
        }
        // The first failure in order is the cause; the statements after it were skipped.
        let values = try results.map { try $0.get() }
        return Array(values.dropFirst(beginning ? 1 : 0))
    }

    // MARK: LISTEN

    /// Listens on `channels` until the task is cancelled or the session breaks (then it throws), calling `deliver`
    /// for each notification. The session does nothing else meanwhile, which is why listeners get one of their own.
    func listen(
        to channels: [String],
        onListening: () -> Void,
        deliver: (PostgresNotification) -> Void
    ) async throws {
        for channel in channels {
            try await query("LISTEN \(identifier: channel)")
        }
        onListening()
        let connection = try begin()
        defer { settle(connection) }
        try consumeInput(connection)  // notifications may have arrived with the LISTEN answers
        while !Task.isCancelled {
            guard PQstatus(connection) == CONNECTION_OK else {
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
            do {
                try await awaitInput(connection, cancellably: true)
            } catch {
                throw PostgresError(kind: .connectionLost, message: "the listening session was lost")
            }
        }
    }

    // MARK: Internals

    /// Drops `sql` from the cache after the server refused its prepared statement `name`, so that the next use
    /// prepares afresh under a new name: "cached plan must not change result type" (a migration changed a table
    /// under a `SELECT *`; the server still holds the statement, to be deallocated), or a statement the server no
    /// longer knows.
    private func forget(_ sql: SQL, preparedAs name: String, refusedWith error: PostgresError) {
        // Another task of the same lease body may have prepared the text afresh meanwhile: keep its entry.
        if preparedStatements[sql.text] == name { preparedStatements[sql.text] = nil }
        if error.sqlState == "0A000", !staleStatements.contains(name) { staleStatements.append(name) }
    }

    /// Deallocates ``staleStatements`` while the session is outside a transaction, one round trip each (a rare
    /// event: once per statement and session after a migration). A name the server refuses is dropped (it no longer
    /// holds the statement); one that could not be sent (task cancelled, lease out of time) waits for the next
    /// statement.
    private func deallocateStaleStatements() async {
        while let name = staleStatements.first, let connection = handle, PQtransactionStatus(connection) == PQTRANS_IDLE {
            do {
                _ = try await exchange { PQsendQuery($0, "DEALLOCATE " + SQL.quoteIdentifier(name)) }
            } catch let error as PostgresError where error.sqlState != nil {
                // Refused by the server: nothing of it left to free.
            } catch {
                return
            }
            staleStatements.removeAll { $0 == name }
        }
    }

    /// The prepared statement name for `sql`, preparing it on first use; `nil` when the cache is full.
    private func preparedName(for sql: SQL) async throws -> String? {
        if let name = preparedStatements[sql.text] { return name }
        guard preparedStatements.count < Self.maxPreparedStatements else { return nil }
        preparedCount += 1
        let name = "fm_\(preparedCount)"
        _ = try await exchange { PQsendPrepare($0, name, sql.text, Int32(sql.parameters.count), nil) }
        preparedStatements[sql.text] = name
        return name
    }

    /// Every statement goes through here: the session must be open, the lease still in time, the task not cancelled;
    /// the running flag lets another thread cancel the statement meanwhile.
    private func exchange(_ send: (OpaquePointer) throws -> Int32) async throws -> QueryResult {
        let connection = try begin()
        defer { settle(connection) }
        return try await roundTrip(connection, send)
    }

    /// Sends one statement (or simple-protocol script) and reads all of its results: the first failure is thrown,
    /// otherwise the last result is returned.
    private func roundTrip(_ connection: OpaquePointer, _ send: (OpaquePointer) throws -> Int32) async throws
        -> QueryResult
    {
        guard try send(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
        try await flush(connection)
        var outcome: Result<QueryResult, any Error>?
        while let result = try await nextResult(connection) {
            let current = Result { try consume(result, connection) }
            if case .failure = outcome { continue }
            outcome = current
        }
        guard let outcome else { throw PostgresError(result: nil, connection: connection) }
        return try outcome.get()
    }

    /// Hands libpq's outgoing buffer to the socket, waiting for room when the socket's own buffer is full.
    private func flush(_ connection: OpaquePointer) async throws {
        while true {
            switch PQflush(connection) {
            case 0:
                return
            case 1:
                await reactor.wait(for: .readableOrWritable, on: socket)
                // libpq asks callers to read meanwhile: a server blocked on sending to us would not read from us.
                try consumeInput(connection)
            default:
                throw PostgresError(result: nil, connection: connection)
            }
        }
    }

    /// The next result, reading from the server until one is complete; `nil` after a statement's last result.
    private func nextResult(_ connection: OpaquePointer) async throws -> OpaquePointer? {
        while PQisBusy(connection) == 1 {
            try await awaitInput(connection)
        }
        guard let result = PQgetResult(connection) else { return nil }
        switch PQresultStatus(result) {
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            // COPY would hand out COPY results for ever; this module does not speak it. The session stays in COPY,
            // so it is not idle, and the pool retires it.
            PQclear(result)
            throw PostgresError.client("COPY is not supported on these sessions")
        default:
            return result
        }
    }

    /// Returns once libpq has read more from the server. The reactor wakes us for input that arrives after we wait;
    /// input left behind by an earlier read (libpq reads a long message in bounded steps) is taken at once.
    private func awaitInput(_ connection: OpaquePointer, cancellably: Bool = false) async throws {
        if !readSinceSend || !hasUnreadInput(connection) {
            if cancellably {
                await reactor.waitCancellably(for: .readable, on: socket)
            } else {
                await reactor.wait(for: .readable, on: socket)
            }
        }
        try consumeInput(connection)
    }

    private func consumeInput(_ connection: OpaquePointer) throws {
        // ``close()`` may have run while the statement waited (it wakes the wait): the `PGconn` is freed then.
        guard handle == connection else { throw PostgresError(kind: .connectionLost, message: "connection closed") }
        readSinceSend = true
        guard PQconsumeInput(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
    }

    /// Whether input is waiting that libpq has not read: in the socket, or, on a TLS session, already decrypted in
    /// OpenSSL (from a record larger than libpq's free buffer), where the socket shows nothing and no wake-up comes.
    private func hasUnreadInput(_ connection: OpaquePointer) -> Bool {
        if let tls = PQsslStruct(connection, "OpenSSL"), SSL_pending(OpaquePointer(tls)) > 0 { return true }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) != 0
    }

    private func begin() throws -> OpaquePointer {
        guard let connection = handle else { throw PostgresError(kind: .connectionLost, message: "connection closed") }
        if committedEarly {
            throw PostgresError.client("the transaction ended with commit(with:); a statement after it would run outside")
        }
        if Task.isCancelled { throw CancellationError() }
        try shared.withLock { state in
            if state.timedOut { throw PostgresError(kind: .timeout, message: "the database lease ran out of time") }
            // The actor lets other calls in at every await: two tasks of one lease body must not interleave their
            // statements on the session (each would read the other's results, and one wait would replace the other).
            if state.running {
                throw PostgresError.client("another statement is running on this session; run them one after another")
            }
            state.running = true
        }
        readSinceSend = false  // what the last statement left unread is not an answer to the next one
        return connection
    }

    private func settle(_ connection: OpaquePointer) {
        // Closed while the statement waited: the `PGconn` is gone.
        let idle = handle == connection && PQstatus(connection) == CONNECTION_OK
            && PQtransactionStatus(connection) == PQTRANS_IDLE
        shared.withLock {
            $0.running = false
            $0.idle = idle
        }
    }

    /// Takes ownership of a result: a successful one becomes a ``QueryResult``, a failed one (freed here) a
    /// ``PostgresError``.
    private func consume(_ result: OpaquePointer?, _ connection: OpaquePointer) throws -> QueryResult {
        guard let result else { throw PostgresError(result: nil, connection: connection) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return QueryResult(taking: result)
        default:
            defer { PQclear(result) }
            let error = PostgresError(result: result, connection: connection)
            if error.isQueryCancelled, shared.withLock({ $0.timedOut }) {
                throw PostgresError(kind: .timeout, sqlState: error.sqlState, message: "the statement ran out of time")
            }
            throw error
        }
    }

    /// Ends an open transaction, whatever the lease's state (a timed-out or cancelled lease still rolls back).
    private func rollbackQuietly() async {
        guard let connection = handle, PQstatus(connection) == CONNECTION_OK,
              PQtransactionStatus(connection) != PQTRANS_IDLE
        else { return }
        defer { settle(connection) }
        _ = try? await roundTrip(connection) { PQsendQuery($0, "ROLLBACK") }
    }
}

/// What other threads may touch, guarded by a mutex.
struct SharedState: Sendable {
    var cancel: CancelRequest?
    /// A ``CancelRequest/send()`` has started and not returned yet.
    var cancelInFlight = false
    var socket: Int32 = -1
    var idle = false
    var running = false
    var closed = false
    var timedOut = false
    var leaseDeadline: ContinuousClock.Instant?

    /// The cancel request to send for the statement running now, marked as on its way; nil when no statement runs or
    /// a cancel is already on its way.
    mutating func claimCancel() -> CancelRequest? {
        guard running, !cancelInFlight, let cancel else { return nil }
        cancelInFlight = true
        return cancel
    }
}

/// libpq's cancel handle for one session (`PGcancel`), freed when neither the session nor a cancel on its way needs it.
///
/// `@unchecked Sendable`: libpq never changes a `PGcancel` after making it, and documents `PQcancel` as safe to call
/// from any thread (even a signal handler).
final class CancelRequest: @unchecked Sendable {
    private let handle: OpaquePointer

    init?(_ connection: OpaquePointer) {
        guard let handle = PQgetCancel(connection) else { return nil }
        self.handle = handle
    }

    deinit { PQfreeCancel(handle) }

    /// Asks the server to cancel the session's running statement, and waits until it has acted. Blocks.
    func send() {
        var error = [CChar](repeating: 0, count: 256)
        _ = PQcancel(handle, &error, Int32(error.count))
    }
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

/// A NUL would silently truncate the C string, and PostgreSQL text cannot hold one anyway.
private let nulInParameter = PostgresError.client("a parameter contains a NUL character, which PostgreSQL text cannot hold")

/// Throws what ``withCStrings(_:_:)`` would throw for `strings`, without copying them.
func requireNoNUL(_ strings: [String?]) throws {
    for case var string? in strings {
        let hasNUL = string.withUTF8 { utf8 in utf8.baseAddress.map { memchr($0, 0, utf8.count) != nil } ?? false }
        if hasNUL { throw nulInParameter }
    }
}

/// `[String?]` as a `const char * const *` valid inside `body`; `nil` becomes a NULL pointer (SQL NULL).
/// The strings are copied, NUL-terminated, into one scratch buffer (on the stack when small): a statement's
/// parameters cost no allocation of their own.
func withCStrings<Result>(
    _ strings: [String?],
    _ body: (UnsafePointer<UnsafePointer<CChar>?>?) throws -> Result
) throws -> Result {
    let byteCount = strings.reduce(0) { $0 + ($1.map { $0.utf8.count + 1 } ?? 0) }
    return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(byteCount, 1)) { bytes in
        try withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: max(strings.count, 1)) { pointers in
            var offset = 0
            for (index, string) in strings.enumerated() {
                guard var string else {
                    pointers[index] = nil
                    continue
                }
                let target = bytes.baseAddress! + offset
                let copied = string.withUTF8 { utf8 -> Bool in
                    guard let source = utf8.baseAddress else { return true }
                    guard memchr(source, 0, utf8.count) == nil else { return false }
                    target.update(from: source, count: utf8.count)
                    return true
                }
                guard copied else { throw nulInParameter }
                offset += string.utf8.count
                bytes[offset] = 0
                offset += 1
                pointers[index] = UnsafeRawPointer(target).assumingMemoryBound(to: CChar.self)
            }
            return try body(UnsafePointer(pointers.baseAddress))
        }
    }
}
