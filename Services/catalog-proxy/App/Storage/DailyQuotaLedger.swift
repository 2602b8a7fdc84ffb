import Foundation
import Postgres

/// An upstream's daily quota, counted in PostgreSQL for every replica together: N replicas must not spend N times the
/// quota, and a restart must not start the day's count afresh.
///
/// Replicas reserve calls in blocks (``UpstreamGate`` spends a block in memory, then reserves the next), so the
/// database sees one write per block rather than one per call. What a replica reserved and did not spend before the
/// day ended, or before it stopped, is lost: at most a block per replica a day.
struct DailyQuotaLedger: Sendable {
    let pool: DatabasePool

    struct Reservation: Sendable, Equatable {
        /// `calls`, 1, or 0 when the quota is spent.
        var calls: Int
        /// The day's calls reserved by every replica, this one included (the whole quota when it is spent).
        var used: Int
    }

    /// Reserves `calls` calls of `upstream`'s quota for the UTC day that starts at `day`, or a single call when fewer
    /// than `calls` are left.
    func reserve(upstream: String, day: Date, calls: Int, quota: Int) async throws -> Reservation {
        var wanted = min(calls, quota)
        while wanted > 0 {
            // One statement: the first reservation of the day inserts the row, later ones add to it only while the
            // sum stays within the quota (the row lock orders replicas reserving at once).
            let reserved = try await pool.query("""
                INSERT INTO upstream_quota_days AS q (upstream, day, used)
                VALUES (\(upstream), (\(day)::timestamptz AT TIME ZONE 'UTC')::date, \(wanted))
                ON CONFLICT (upstream, day) DO UPDATE SET used = q.used + \(wanted), updated_at = now()
                 WHERE q.used + \(wanted) <= \(quota)
                RETURNING used
                """, prepare: true)
            if let used = try reserved.values(Int.self).first { return Reservation(calls: wanted, used: used) }
            wanted = wanted > 1 ? 1 : 0
        }
        return Reservation(calls: 0, used: quota)
    }

    /// Calls reserved at a time for a quota of `quota` calls a day: a 500th of it, so that replicas lose little of it
    /// to unspent blocks.
    static func blockSize(forQuota quota: Int) -> Int { max(1, quota / 500) }
}
