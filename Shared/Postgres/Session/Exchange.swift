import CLibpq
import Foundation
import Locking
import PostgresValues
import PostgresWaiting

/// How a statement travels: libpq's protocol steps and the prepared-statement cache.
///
/// All of it is synchronous and runs on the session's thread, which blocks while it waits for the server: nothing
/// else can run on the session in the middle of a statement.
extension PostgresConnection {
    /// Drops `sql` from the cache after the server refused its prepared statement `name`, so that the next use
    /// prepares afresh under a new name: "cached plan must not change result type" (a migration changed a table
    /// under a `SELECT *`; the server still holds the statement, to be deallocated), or a statement the server no
    /// longer knows.
    func forget(_ sql: SQL, preparedAs name: String, refusedWith error: PostgresError) {
        if preparedStatements[sql.text] == name { preparedStatements[sql.text] = nil }
        if error.sqlState == "0A000", !staleStatements.contains(name) { staleStatements.append(name) }
    }

    /// Deallocates ``staleStatements`` while the session is outside a transaction, one round trip each (a rare
    /// event: once per statement and session after a migration). A name the server refuses is dropped (it no longer
    /// holds the statement); one that could not be sent (task cancelled, lease out of time) waits for the next
    /// statement.
    func deallocateStaleStatements() {
        while let name = staleStatements.first, let connection = handle, PQtransactionStatus(connection) == PQTRANS_IDLE {
            do {
                _ = try exchange { PQsendQuery($0, "DEALLOCATE " + SQL.quoteIdentifier(name)) }
            } catch let error as PostgresError where error.sqlState != nil {
                // Refused by the server: nothing of it left to free.
            } catch {
                return
            }
            staleStatements.removeAll { $0 == name }
        }
    }

    /// The prepared statement name for `sql`, preparing it on first use; `nil` when the cache is full.
    func preparedName(for sql: SQL) throws -> String? {
        if let name = preparedStatements[sql.text] { return name }
        guard preparedStatements.count < Self.maxPreparedStatements else { return nil }
        preparedCount += 1
        let name = "fm_\(preparedCount)"
        _ = try exchange { PQsendPrepare($0, name, sql.text, Int32(sql.parameters.count), nil) }
        preparedStatements[sql.text] = name
        return name
    }

    /// Every statement goes through here: the session must be open, the lease still in time, the task not cancelled;
    /// the running flag lets another thread cancel the statement meanwhile.
    func exchange(_ send: (OpaquePointer) throws -> Int32) throws -> QueryResult {
        let connection = try begin()
        defer { settle(connection) }
        return try roundTrip(connection, send)
    }

    /// Sends one statement (or simple-protocol script) and reads all of its results: the first failure is thrown,
    /// otherwise the last result is returned.
    func roundTrip(_ connection: OpaquePointer, _ send: (OpaquePointer) throws -> Int32) throws -> QueryResult {
        guard try send(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
        roundTrips += 1
        try flush(connection)
        var outcome: Result<QueryResult, any Error>?
        while let result = try nextResult(connection) {
            let current = Result { try consume(result, connection) }
            if case .failure = outcome { continue }
            outcome = current
        }
        guard let outcome else { throw PostgresError(result: nil, connection: connection) }
        return try outcome.get()
    }

    /// Hands libpq's outgoing buffer to the socket, waiting for room when the socket's own buffer is full.
    func flush(_ connection: OpaquePointer) throws {
        while true {
            switch PQflush(connection) {
            case 0:
                return
            case 1:
                thread.wait(for: .readableOrWritable, on: socket)
                // libpq asks callers to read meanwhile: a server blocked on sending to us would not read from us.
                try consumeInput(connection)
            default:
                throw PostgresError(result: nil, connection: connection)
            }
        }
    }

    /// The next result, reading from the server until one is complete; `nil` after a statement's last result.
    func nextResult(_ connection: OpaquePointer) throws -> OpaquePointer? {
        while PQisBusy(connection) == 1 {
            try awaitInput(connection)
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

    /// Returns once libpq has read more from the server (or, when `interruptible`, the wait was interrupted).
    func awaitInput(_ connection: OpaquePointer, interruptible: Bool = false) throws {
        if !hasDecryptedInput(connection) {
            thread.wait(for: .readable, on: socket, interruptible: interruptible)
        }
        try consumeInput(connection)
    }

    func consumeInput(_ connection: OpaquePointer) throws {
        guard PQconsumeInput(connection) == 1 else { throw PostgresError(result: nil, connection: connection) }
    }

    /// Whether a TLS session has input that OpenSSL decrypted and libpq has not taken yet (the rest of a record
    /// larger than libpq's free buffer): the socket shows nothing then, and a wait would wait for ever.
    func hasDecryptedInput(_ connection: OpaquePointer) -> Bool {
        guard let tls = PQsslStruct(connection, "OpenSSL") else { return false }
        return SSL_pending(OpaquePointer(tls)) > 0
    }

    func begin() throws -> OpaquePointer {
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

    func settle(_ connection: OpaquePointer) {
        let idle = PQstatus(connection) == CONNECTION_OK
            && PQtransactionStatus(connection) == PQTRANS_IDLE
        shared.withLock {
            $0.running = false
            $0.idle = idle
        }
    }

    /// Takes ownership of a result: a successful one becomes a ``QueryResult``, a failed one (freed here) a
    /// ``PostgresError``.
    func consume(_ result: OpaquePointer?, _ connection: OpaquePointer) throws -> QueryResult {
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
    func rollbackQuietly() {
        guard let connection = handle, PQstatus(connection) == CONNECTION_OK,
              PQtransactionStatus(connection) != PQTRANS_IDLE
        else { return }
        defer { settle(connection) }
        _ = try? roundTrip(connection) { PQsendQuery($0, "ROLLBACK") }
    }
}
