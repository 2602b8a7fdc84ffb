import EventStore
import Locking
import Postgres

/// Commits the writes that arrive together in one transaction: a group commit. A write that finds fewer than
/// `leaders` transactions in flight leads one at once; any other waits in line, and the next transaction to take a
/// session takes the whole line with it (up to `maximumBatch`). A lone write therefore waits for nothing, and under
/// load a session, a pipeline and a commit (with `synchronous_commit=on`, a flush to disk) serve many writes.
///
/// The transaction is what each write would send alone, shared: BEGIN, every stream's lock in one statement (in the
/// order of the lock keys, so two transactions never wait for each other in a circle), each write's statement in the
/// order the writes came, COMMIT, in one pipeline. Each statement takes its snapshot when it
/// starts, under every lock, so it sees the writes before it in the same transaction as it would see them committed.
///
/// A write is never applied twice nor lost by sharing: when the server refuses any statement, the transaction is
/// rolled back whole, and each of its writes is sent again alone, where only its own error can reach it. An error that
/// leaves the outcome unknown (the connection lost) reaches every write of the transaction, as it would reach a lone
/// write; a keyed write's retry finds its event if it was committed.
final class GroupCommit: Sendable {
    let pool: DatabasePool
    /// How many transactions may be in flight at once: below the pool's size, so reads always find a session.
    let leaders: Int
    let maximumBatch: Int

    struct Write: Sendable {
        var stream: String
        var statement: SQL
    }

    /// What a waiting write is told to do.
    private enum Turn: Sendable {
        /// Take a session and commit the line.
        case lead
        /// Another transaction ran the write: its statement's result, or the error that ended the transaction.
        case done(Result<QueryResult, any Error>)
        /// The shared transaction was refused; send the write again alone.
        case alone
    }

    private struct Waiting: Sendable {
        var write: Write
        var turn: CheckedContinuation<Turn, Never>
    }

    private struct Line: Sendable {
        var waiting: [Waiting] = []
        var leading = 0
    }

    private let line = Locked(Line())

    init(pool: DatabasePool, leaders: Int, maximumBatch: Int = 32) {
        self.pool = pool
        self.leaders = max(1, leaders)
        self.maximumBatch = max(1, maximumBatch)
    }

    /// Commits `write` and returns its statement's result.
    func commit(_ write: Write) async throws -> QueryResult {
        let turn = await withCheckedContinuation { (turn: CheckedContinuation<Turn, Never>) in
            let leads = line.withLock { line in
                guard line.leading < leaders else {
                    line.waiting.append(Waiting(write: write, turn: turn))
                    return false
                }
                line.leading += 1
                return true
            }
            if leads { turn.resume(returning: .lead) }
        }
        switch turn {
        case .lead: return try await lead(with: write)
        case .done(let result): return try result.get()
        case .alone: return try await alone(write)
        }
    }

    /// Runs one transaction: `own` and the line as it is once a session is leased. Then the next in line leads.
    private func lead(with own: Write) async throws -> QueryResult {
        defer { handOver() }
        let taken = Locked<[Waiting]>([])  // the followers, also when the transaction throws
        do {
            let results = try await pool.withTransaction { connection in
                let followers = self.line.withLock { line in
                    let first = Array(line.waiting.prefix(self.maximumBatch - 1))
                    line.waiting.removeFirst(first.count)
                    return first
                }
                taken.withLock { $0 = followers }
                return try await Self.send([own] + followers.map(\.write), on: connection)
            }
            for (follower, result) in zip(taken.withLock { $0 }, results.dropFirst()) {
                follower.turn.resume(returning: .done(.success(result)))
            }
            return results[0]
        } catch {
            // Refused by the server, or stopped before it was sent: nothing was applied, so each write may go again,
            // alone. Otherwise (the connection lost) the outcome is unknown, and every write learns it.
            let kind = (error as? PostgresError)?.kind
            let rolledBack = kind == .server || kind == .timeout || kind == .client || error is CancellationError
            let followers = taken.withLock { $0 }
            for follower in followers { follower.turn.resume(returning: rolledBack ? .alone : .done(.failure(error))) }
            if rolledBack, !followers.isEmpty, !(error is CancellationError) { return try await alone(own) }
            throw error
        }
    }

    private func alone(_ write: Write) async throws -> QueryResult {
        try await pool.withTransaction { connection in try await Self.send([write], on: connection)[0] }
    }

    /// The transaction's one pipeline: the streams' locks, each write's statement, COMMIT. Their results, in turn.
    private static func send(_ writes: [Write], on connection: isolated PostgresConnection) async throws
        -> [QueryResult]
    {
        let locks = FavoritesWriteStatements.locks(writes.map(\.stream))
        let results = try await connection.commit(with: [locks] + writes.map(\.statement), prepare: true)
        return Array(results.suffix(writes.count))
    }

    /// Passes the lead to the first write in line, or leaves one leader fewer.
    private func handOver() {
        let next = line.withLock { line -> Waiting? in
            guard !line.waiting.isEmpty else {
                line.leading -= 1
                return nil
            }
            return line.waiting.removeFirst()
        }
        next?.turn.resume(returning: .lead)
    }
}
