import CLibpq
import Foundation
import Locking
import PostgresValues
import PostgresWaiting

/// One PostgreSQL session.
///
/// The session runs on a thread of its own (its ``SessionThread`` is the actor's executor): libpq's calls, the waits
/// for the server, and the body of a transaction, which is isolated to the session. libpq is in non-blocking mode,
/// so that every wait, for input or for room to send, goes through the one ``SessionThread/wait(for:on:interruptible:)``
/// (a LISTEN can then be interrupted). Connecting and cancelling block for a round trip or longer: each runs on a
/// thread started for it, so neither holds up the caller, the session, or the pool.
///
/// The actor serialises the session: a `PGconn` must never be used by two threads at once, and nothing else runs on
/// the session while a transaction body awaits its statements (the pool leases a session to one caller at a time).
public actor PostgresConnection {
    /// The `PGconn *`; `nil` once closed. Never leaves the actor.
    var handle: OpaquePointer?
    /// The session's socket.
    let socket: Int32
    /// Runs the session and waits for its server.
    let thread: SessionThread
    /// Statement text → server-side prepared statement name, for this session.
    var preparedStatements: [String: String] = [:]
    /// Names are never reused: a statement dropped from the cache may still exist on the server.
    var preparedCount = 0
    /// Prepared statements the server refused after a schema change, dropped from the cache but still held by the
    /// server: deallocated before the next statement that runs outside a transaction (inside one, the refusal has
    /// aborted it, and a `DEALLOCATE` would fail too).
    var staleStatements: [String] = []
    /// The `BEGIN` of ``withTransaction(isolation:_:)``, not sent yet: it travels with the body's first statement.
    var pendingBegin: SQL?
    /// ``commit(with:prepare:)`` ended the transaction of the running ``withTransaction(isolation:_:)`` body.
    var committedEarly = false
    /// Round trips to the server so far: each statement sent alone, each pipeline, each prepare. What a write costs
    /// the network, for tests and measurements to count.
    public internal(set) var roundTrips = 0
    /// The only state other threads read or write: cancellation and the reusability check happen from outside.
    let shared = Locked(SharedState())

    /// Prepared statements kept per session; past this, statements run unprepared rather than growing without bound.
    static let maxPreparedStatements = 256

    public nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    /// Opens a session. The connect blocks a thread started for it, never the caller's.
    public init(configuration: ConnectionConfiguration) async throws {
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
        handle = connection
        socket = PQsocket(connection)
        thread = SessionThread(name: Self.threadName)
        let cancel = CancelRequest(connection)
        shared.withLock { [socket] in $0 = SharedState(cancel: cancel, socket: socket, idle: true) }
    }

    /// The name of a session's thread, as `top -H` and tests see it.
    public static let threadName = "pg-session"

    /// The pool and the listener close their sessions; whatever closed this one, its thread ends with it.
    deinit { thread.stop() }

    /// `PQconnectdbParams` on a thread of its own; the `PGconn *` crosses back as an address.
    private static func connect(_ keywords: [(String, String)]) async -> Result<OpaquePointer, PostgresError> {
        let address = await withCheckedContinuation { (continuation: CheckedContinuation<Result<UInt, PostgresError>, Never>) in
            runOnThreadOfItsOwn(named: "pg-connect") {
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

    /// Runs `work` on a thread started for it: the libpq calls that block for a round trip or longer (connecting,
    /// cancelling) never run on a caller's thread or a session's.
    static func runOnThreadOfItsOwn(named name: String, _ work: @escaping @Sendable () -> Void) {
        let thread = Thread(block: work)
        thread.name = name
        thread.start()
    }

    /// Closes the session. Idempotent.
    public func close() {
        guard let connection = handle else { return }
        handle = nil
        // A cancel still on its way keeps its own reference to the request, which is freed after it.
        shared.withLock { $0 = SharedState(closed: true) }
        PQfinish(connection)
    }
}
