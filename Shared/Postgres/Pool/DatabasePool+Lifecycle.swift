import Locking
import PostgresSession
import PostgresValues
import ServiceLifecycle

extension DatabasePool {

    /// Parks until graceful shutdown (the HTTP server, later in the service group, has drained by then), then closes.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Runs `body` with this pool, then closes the pool, whether `body` returned or threw: for a pool that lives
    /// only as long as one task (a command-line job, a test).
    public func closing<Value: Sendable>(after body: (DatabasePool) async throws -> Value) async throws
        -> Value
    {
        do {
            let value = try await body(self)
            await close()
            return value
        } catch {
            await close()  // on every path: `defer` cannot await
            throw error
        }
    }

    /// Refuses new leases, fails waiters, waits for leased sessions to come back, closes everything. Idempotent.
    public func close() async {
        let taken = state.withLock { state -> (reaper: Task<Void, Never>?, waiters: [Waiter])? in
            guard !state.closed else { return nil }
            state.closed = true
            defer {
                state.reaper = nil
                state.waiters = []
            }
            return (state.reaper, state.waiters)
        }
        guard let taken else { return }
        taken.reaper?.cancel()
        for waiter in taken.waiters {
            waiter.continuation.resume(throwing: PostgresError(kind: .poolClosed, message: "the database pool is closed"))
        }
        await withCheckedContinuation { continuation in
            let drained = state.withLock { state in
                if state.leased.isEmpty { return true }
                state.drained = continuation
                return false
            }
            if drained { continuation.resume() }
        }
        let free = state.withLock { state in
            defer { state.freeSlots = [] }
            return state.freeSlots
        }
        for case .ready(let connection) in free { await connection.close() }
        publishGauges()
    }
}
