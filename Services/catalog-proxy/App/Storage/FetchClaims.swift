import Foundation
import Logging
import Postgres

/// Which replica is fetching what, so that replicas asking for the same upstream record at once make one call between
/// them: the first claims the key and fetches, the others wait for its result to appear in the shared store.
///
/// A claim lapses after its duration, so a replica that dies while fetching holds nobody up for longer than that.
/// The table is unlogged: after a crash the claims are gone, which only means a record may be fetched twice.
struct FetchClaims: Sendable {
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

    /// `fetch`'s value for `key`, fetched by this replica unless another one has claimed it: then the value that
    /// replica stores, read with `lookup` while its claim lasts. If none appears (that replica failed or died), this
    /// one fetches after all. A database error on the way is not the upstream's fault: the fetch goes ahead unclaimed.
    func once<Value: Sendable>(
        _ key: String, claimFor duration: TimeInterval, logger: Logger,
        lookup: () async throws -> Value?, fetch: () async throws -> Value
    ) async throws -> Value {
        let claimed: Bool
        do {
            claimed = try await claim([key], for: duration).contains(key)
        } catch {
            logger.warning("could not claim a fetch; fetching unclaimed", metadata: ["error": "\(error)"])
            return try await fetch()
        }
        if claimed {
            do {
                let value = try await fetch()
                await release([key], logger: logger)
                return value
            } catch {
                await release([key], logger: logger)
                throw error
            }
        }
        let deadline = ContinuousClock.now + .seconds(duration)
        var pause = Duration.milliseconds(25)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(250))
            do {
                if let value = try await lookup() { return value }
                if try await held([key]).isEmpty { break }
            } catch {
                break
            }
        }
        return try await fetch()
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
