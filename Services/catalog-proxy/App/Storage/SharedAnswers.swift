import Foundation
import Logging
import Postgres

/// Upstream answers that many requests share (a search's page of ids, a maker's record), kept in PostgreSQL for
/// every replica for as long as the request says (``UpstreamRequest/sharedFor``). A later page of results that lies
/// in an upstream page already fetched costs no call, whichever replica serves it.
struct SharedAnswers: Sendable {
    let pool: DatabasePool
    private let prune = PruneSchedule()

    init(pool: DatabasePool) {
        self.pool = pool
    }

    /// The stored answer for `key` while it has not expired.
    func answer(for key: String) async throws -> UpstreamAnswer? {
        let rows = try await pool.query("""
            SELECT status, body FROM upstream_answers WHERE key = \(key) AND expires_at > now()
            """, prepare: true).rows
        guard let row = rows.first else { return nil }
        return UpstreamAnswer(status: try row.decode(Int.self, column: "status"),
                              body: try row.decode(Data.self, column: "body"))
    }

    /// How many seconds ago the answers kept for `keys` were fetched, by key; a key with no answer kept (or an expired
    /// one) is absent.
    func ages(of keys: [String]) async throws -> [String: TimeInterval] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await pool.query("""
            SELECT key, extract(epoch FROM now() - fetched_at)::float8 AS age FROM upstream_answers
             WHERE key IN (SELECT jsonb_array_elements_text(\(PostgresJSON(keys))::jsonb)) AND expires_at > now()
            """, prepare: true)
        return Dictionary(try rows.rows.map { row in
            (try row.decode(String.self, column: "key"), max(0, try row.decode(Double.self, column: "age")))
        }) { first, _ in first }
    }

    func store(_ answer: UpstreamAnswer, for key: String, keptFor duration: TimeInterval) async throws {
        try await pool.query("""
            INSERT INTO upstream_answers (key, status, body, fetched_at, expires_at)
            VALUES (\(key), \(answer.status), \(answer.body), now(), now() + make_interval(secs => \(duration)))
            ON CONFLICT (key) DO UPDATE
               SET status = excluded.status, body = excluded.body, fetched_at = excluded.fetched_at,
                   expires_at = excluded.expires_at
            """, prepare: true)
        try await pruneIfDue()
    }

    /// Deletes expired answers, now and then (``PruneSchedule``).
    private func pruneIfDue() async throws {
        guard prune.isDue() else { return }
        try await pool.query("DELETE FROM upstream_answers WHERE expires_at < now()")
    }
}
