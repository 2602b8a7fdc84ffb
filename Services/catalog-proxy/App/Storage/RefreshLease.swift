import Foundation
import Logging
import Postgres

/// A lease in PostgreSQL that lets one replica at a time run a scheduled refresh (`refresh_leases`): the holder
/// renews it while it works; another replica takes it once it has lapsed, so a replica that stops or dies holds the
/// work up for one lease at most. Two replicas never hold it at once: taking it is one conditional upsert.
struct RefreshLease: Sendable {
    let pool: DatabasePool
    let name: String
    /// This replica, as the lease names it.
    let holder: UUID

    /// Takes the lease, or renews it when this replica holds it, for `duration`; whether this replica holds it now.
    func hold(for duration: TimeInterval) async throws -> Bool {
        try await !pool.query("""
            INSERT INTO refresh_leases AS lease (name, holder, held_until)
            VALUES (\(name), \(holder), now() + make_interval(secs => \(duration)))
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, held_until = excluded.held_until
             WHERE lease.holder = excluded.holder OR lease.held_until < now()
            RETURNING holder
            """, prepare: true).rows.isEmpty
    }

    /// Gives the lease up (at shutdown), so another replica takes it at once; a failure only means it lapses.
    func release(logger: Logger) async {
        do {
            try await pool.query("DELETE FROM refresh_leases WHERE name = \(name) AND holder = \(holder)")
        } catch {
            logger.warning("could not release a refresh lease", metadata: ["lease": "\(name)", "error": "\(error)"])
        }
    }
}
