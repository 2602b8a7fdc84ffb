import Foundation
import Logging
import Postgres

/// Which replica is fetching what, so that replicas asking for the same upstream record at once make one call between
/// them (``Coalescer``): the first claims the key and fetches, the others wait for its result to appear in the shared
/// store.
///
/// A claim lapses after its duration, so a replica that dies while fetching holds nobody up for longer than that.
/// The table is unlogged: after a crash the claims are gone, which only means a record may be fetched twice.
struct FetchClaims: ReplicaClaims {
    let pool: DatabasePool

    /// Claims those of `keys` that no other replica holds, for `duration`; returns the keys claimed.
    func claim(_ keys: [String], for duration: TimeInterval) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let rows = try await pool.query("""
            INSERT INTO fetch_claims AS c (key, claimed_until)
            SELECT key, now() + make_interval(secs => \(duration))
              FROM jsonb_array_elements_text(\(PostgresJSON(keys.sorted()))::jsonb) AS key
            ON CONFLICT (key) DO UPDATE SET claimed_until = excluded.claimed_until WHERE c.claimed_until < now()
            RETURNING key
            """, prepare: true)
        return Set(try rows.values(String.self))
    }

    /// Which of `keys` another replica still holds.
    func held(_ keys: [String]) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let rows = try await pool.query("""
            SELECT key FROM fetch_claims
             WHERE key IN (SELECT jsonb_array_elements_text(\(PostgresJSON(keys))::jsonb)) AND claimed_until >= now()
            """, prepare: true)
        return Set(try rows.values(String.self))
    }

    /// Gives the claims up; a failure only means they lapse on their own (logged).
    func release(_ keys: [String], logger: Logger) async {
        guard !keys.isEmpty else { return }
        do {
            try await pool.query("""
                DELETE FROM fetch_claims WHERE key IN (SELECT jsonb_array_elements_text(\(PostgresJSON(keys))::jsonb))
                """, prepare: true)
        } catch {
            logger.warning("could not release fetch claims", metadata: ["error": "\(error)"])
        }
    }
}
