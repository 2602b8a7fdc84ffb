import Crypto
import Foundation
import Postgres

/// One throttled key and the policy that governs it.
struct ThrottleKey: Sendable, Hashable {
    var key: String
    var policy: ThrottlePolicy

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.key == rhs.key }
    func hash(into hasher: inout Hasher) { hasher.combine(key) }

    /// The keys a sign-in attempt counts against. The email is stored only as a digest: the table must not become a
    /// list of addresses people typed.
    static func forSignIn(email: EmailAddress, clientAddress: String) -> [ThrottleKey] {
        let account = SHA256.hash(data: Data(email.value.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return [
            ThrottleKey(key: "account-address:\(account):\(clientAddress)", policy: .accountFromAddress),
            ThrottleKey(key: "account:\(account)", policy: .account),
            ThrottleKey(key: "address:\(clientAddress)", policy: .address),
        ]
    }
}

/// Failed sign-in counters in PostgreSQL, so every replica sees the same ones.
struct ThrottleStore: Sendable {
    let pool: DatabasePool

    /// The longest wait any of `keys` imposes at `now`, or nil when none is blocked.
    func retryAfter(_ keys: [ThrottleKey], now: Date) async throws -> TimeInterval? {
        var longest: TimeInterval?
        for key in keys {
            let state = try await pool.query("""
                SELECT failures, window_started_at, blocked_until FROM sign_in_throttle WHERE key = \(key.key)
                """, prepare: true).rows.first.map(Self.state)
            if let wait = key.policy.retryAfter(state, now: now) { longest = max(longest ?? 0, wait) }
        }
        return longest
    }

    /// Counts one failure against each key. Rows are locked while they are updated, so concurrent failures on other
    /// replicas all count.
    func recordFailure(_ keys: [ThrottleKey], now: Date) async throws {
        try await pool.withTransaction { connection in
            for key in keys.sorted(by: { $0.key < $1.key }) {  // one lock order: no deadlock between replicas
                try await connection.query("""
                    INSERT INTO sign_in_throttle (key, failures, window_started_at) VALUES (\(key.key), 0, \(now))
                    ON CONFLICT (key) DO NOTHING
                    """)
                let current = try await Self.state(connection.query("""
                    SELECT failures, window_started_at, blocked_until FROM sign_in_throttle
                     WHERE key = \(key.key) FOR UPDATE
                    """).single())
                let next = key.policy.recordingFailure(current.failures == 0 ? nil : current, now: now)
                try await connection.query("""
                    UPDATE sign_in_throttle
                       SET failures = \(next.failures), window_started_at = \(next.windowStartedAt),
                           blocked_until = \(next.blockedUntil)
                     WHERE key = \(key.key)
                    """)
            }
        }
    }

    /// Forgets the failures of a key (the account-from-address pair after a successful sign-in).
    func clear(_ key: ThrottleKey) async throws {
        try await pool.query("DELETE FROM sign_in_throttle WHERE key = \(key.key)")
    }

    /// Drops rows whose window has passed and that block nothing.
    func prune(now: Date, longestWindow: TimeInterval) async throws -> Int {
        try await pool.query("""
            DELETE FROM sign_in_throttle
             WHERE window_started_at < \(now.addingTimeInterval(-longestWindow))
               AND (blocked_until IS NULL OR blocked_until < \(now))
            """).affectedRows
    }

    private static func state(_ row: PostgresRow) throws -> ThrottlePolicy.State {
        let (failures, started, blockedUntil) = try row.decode((Int, Date, Date?).self)
        return ThrottlePolicy.State(failures: failures, windowStartedAt: started, blockedUntil: blockedUntil)
    }
}
