import Foundation
import Postgres

/// Calls counted over sliding windows in PostgreSQL, for every replica together: an upstream's own windows (the NYT's
/// 5 calls in any 60 seconds) and each user's share of an upstream's budgets. A call is recorded only when every
/// budget it is counted against lets it go, so a refused call spends nothing.
///
/// The times are the database's clock, one for every replica; tests pass their own.
struct RollingCallLedger: Sendable {
    struct Budget: Sendable, Equatable {
        /// The upstream's name, or the upstream's name and a user's id.
        let key: String
        let limits: [RollingLimit]
        /// A user's share (refused as ``UpstreamFailure/userShareSpent(retryAfter:)``), not the upstream's own
        /// budget (refused as ``UpstreamFailure/rateLimited(retryAfter:)``).
        let isUsers: Bool
    }

    let pool: DatabasePool
    private let prune = PruneSchedule()

    init(pool: DatabasePool) {
        self.pool = pool
    }

    /// Records one call against every budget at `now` (nil: the database's clock), or throws the refusal of the budget
    /// that lets it go last.
    func reserve(_ budgets: [Budget], now: Date? = nil) async throws(UpstreamFailure) {
        let refusal: UpstreamFailure?
        do {
            refusal = try await pool.withTransaction { connection -> UpstreamFailure? in
                // One lock per key, taken in one order: replicas reserving at once are counted one after the other.
                let keys = budgets.map(\.key).sorted()
                var clock: Date?
                for key in keys {
                    clock = try await connection.query("""
                        SELECT COALESCE(\(now)::timestamptz, clock_timestamp())
                          FROM (SELECT pg_advisory_xact_lock(hashtextextended('rolling-calls ' || \(key), 0))) AS locked
                        """, prepare: true).scalar(Date.self)
                }
                guard let at = clock else { return nil }
                var worst: UpstreamFailure?
                var longestWait: TimeInterval = 0
                for budget in budgets {
                    let longestWindow = budget.limits.map(\.window).max() ?? 0
                    let calls = try await connection.query("""
                        SELECT called_at FROM upstream_calls
                         WHERE key = \(budget.key)
                           AND called_at > \(at)::timestamptz - make_interval(secs => \(longestWindow)::float8)
                        """, prepare: true).values(Date.self)
                    if let wait = RollingLimit.wait(for: budget.limits, after: calls, now: at), wait > longestWait {
                        longestWait = wait
                        worst = budget.isUsers ? .userShareSpent(retryAfter: wait) : .rateLimited(retryAfter: wait)
                    }
                }
                if let worst { return worst }
                for key in keys {
                    try await connection.query("INSERT INTO upstream_calls (key, called_at) VALUES (\(key), \(at))",
                                               prepare: true)
                }
                if prune.isDue() {  // by the same clock: no window is longer than a day
                    try await connection.query(
                        "DELETE FROM upstream_calls WHERE called_at < \(at)::timestamptz - interval '1 day 1 minute'")
                }
                return nil
            }
        } catch {
            throw .quotaLedgerUnavailable("\(error)")
        }
        if let refusal { throw refusal }
    }
}
