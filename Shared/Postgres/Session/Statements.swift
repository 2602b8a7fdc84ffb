import CLibpq
import PostgresValues

/// Statements, pipelines and transactions: what callers run on a session.
extension PostgresConnection {
    /// Runs one statement with bound parameters. With `prepare: true` the statement is parsed and planned once per
    /// session and reused (for hot queries; the text must be a constant for this to pay off).
    @discardableResult
    public func query(_ sql: SQL, prepare: Bool = false) async throws -> QueryResult {
        if !staleStatements.isEmpty { deallocateStaleStatements() }
        if pendingBegin != nil { return try pipelined([(sql, prepare)])[0] }
        if prepare, let name = try preparedName(for: sql) {
            do {
                return try exchange { connection in
                    try withCStrings(sql.parameters) { values in
                        PQsendQueryPrepared(connection, name, Int32(sql.parameters.count), values, nil, nil, 0)
                    }
                }
            } catch let error as PostgresError where error.invalidatesPreparedStatement {
                forget(sql, preparedAs: name, refusedWith: error)
                throw error
            }
        }
        return try exchange { connection in
            try withCStrings(sql.parameters) { values in
                PQsendQueryParams(connection, sql.text, Int32(sql.parameters.count), nil, values, nil, nil, 0)
            }
        }
    }

    /// Runs several statements without parameters in one round trip (simple query protocol): migrations, set-up.
    /// Returns the last statement's result.
    @discardableResult
    public func execute(_ script: SQLScript) async throws -> QueryResult {
        if !staleStatements.isEmpty { deallocateStaleStatements() }
        if pendingBegin != nil { _ = try pipelined([]) }  // the simple protocol cannot join a pipeline: BEGIN first
        return try exchange { PQsendQuery($0, script.text) }
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
            rollbackQuietly()
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
        let results = try pipelined(statements.map { ($0, prepare) } + [("COMMIT", false)])
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
        try pipelined(statements.map { ($0, prepare) })
    }

    /// ``pipeline(_:prepare:)`` with a choice per statement, and the pending `BEGIN` of a transaction in front.
    func pipelined(_ requested: [(sql: SQL, prepare: Bool)]) throws -> [QueryResult] {
        // Everything that can fail before the pipeline is sent, first: a NUL in a parameter, and preparing (a round
        // trip of its own, on first use only). The pending `BEGIN` is taken only after, so that when either throws
        // (and the body catches it) the transaction's next statement still carries it; and no error leaves statements
        // queued in pipeline mode without their sync.
        for (sql, _) in requested { try requireNoNUL(sql.parameters) }
        if !staleStatements.isEmpty { deallocateStaleStatements() }
        var names: [String?] = []
        for (sql, prepare) in requested { names.append(prepare ? try preparedName(for: sql) : nil) }
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
        roundTrips += 1
        try flush(connection)
        var results: [Result<QueryResult, any Error>] = []
        for _ in batch {
            let first = try nextResult(connection)
            results.append(Result { try self.consume(first, connection) })
            while let extra = try nextResult(connection) { PQclear(extra) }  // each statement's results end with NULL
        }
        while let sync = try nextResult(connection) {  // PGRES_PIPELINE_SYNC
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
