import Crypto
import Foundation
import Postgres

/// One throttled key and the policy that governs it.
struct ThrottleKey: Sendable, Hashable {
    var key: String
    var policy: ThrottlePolicy

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.key == rhs.key }
    func hash(into hasher: inout Hasher) { hasher.combine(key) }

    /// The keys a sign-in attempt counts against: from a device that signed in to this account before (`knownDevice`,
    /// its credential's throttle name), that device alone; from any other, the account from this address, the
    /// account, and the address. The email is stored only as a digest: the table must not become a list of addresses
    /// people typed.
    static func forSignIn(email: EmailAddress, clientAddress: String, knownDevice: String? = nil) -> [ThrottleKey] {
        if let knownDevice { return [ThrottleKey(key: "device:\(knownDevice)", policy: .knownDevice)] }
        let account = digest(of: email.value)
        return [
            ThrottleKey(key: "account-address:\(account):\(clientAddress)", policy: .accountFromAddress),
            ThrottleKey(key: "account:\(account)", policy: .account),
            ThrottleKey(key: "address:\(clientAddress)", policy: .address),
        ]
    }

    /// The keys a request for a mail counts against: the address it goes to (as a digest, like sign-ins) and the
    /// client asking. Counted the same whether or not an account has the address.
    static func forMail(to email: String, clientAddress: String, limits: MailLimits) -> [ThrottleKey] {
        [
            ThrottleKey(key: "mail-to:\(digest(of: email))", policy: limits.perRecipient),
            ThrottleKey(key: "mail-from:\(clientAddress)", policy: limits.perClient),
        ]
    }

    /// A normalized email as a throttle key names it.
    private static func digest(of email: String) -> String {
        SHA256.hash(data: Data(email.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}

/// Failed sign-in counters in PostgreSQL, so every replica sees the same ones.
struct ThrottleStore: Sendable {
    let pool: DatabasePool

    /// A password check counted by ``beginAttempt(_:now:)``: each key's state just before and just after the count.
    struct Attempt: Sendable {
        fileprivate var counts: [(key: ThrottleKey, before: ThrottlePolicy.State?, counted: ThrottlePolicy.State)]

        /// How long the longest block this count started lasts from `now`, if it started one: for requests that are
        /// all counted (mails), the one past the allowance is already refused.
        func blockStarted(now: Date) -> TimeInterval? {
            counts.compactMap { $0.key.policy.retryAfter($0.counted, now: now) }.max()
        }
    }

    enum Admission: Sendable {
        case counted(Attempt)
        /// A key is blocked for this long; nothing was counted.
        case blocked(retryAfter: TimeInterval)
    }

    /// Counts a password check against each of `keys` before it runs, as a failure, unless one of them is blocked at
    /// `now`: then nothing is counted. The rows are locked while they are read and updated, so concurrent checks on
    /// every replica are counted one after another, and no more of them get through than the allowance.
    func beginAttempt(_ keys: [ThrottleKey], now: Date) async throws -> Admission {
        try await pool.withTransaction { connection in
            var states: [(key: ThrottleKey, state: ThrottlePolicy.State?)] = []
            for key in keys.sorted(by: { $0.key < $1.key }) {  // one lock order: no deadlock between replicas
                states.append((key, try await Self.lockedState(of: key, now: now, on: connection)))
            }
            if let longest = states.compactMap({ $0.key.policy.retryAfter($0.state, now: now) }).max() {
                return .blocked(retryAfter: longest)
            }
            var attempt = Attempt(counts: [])
            for (key, state) in states {
                let counted = key.policy.recordingFailure(state, now: now)
                try await Self.update(key, to: counted, on: connection)
                attempt.counts.append((key, state, counted))
            }
            return .counted(attempt)
        }
    }

    /// Takes back the failure ``beginAttempt(_:now:)`` counted: the password was right. The first of the attempt's
    /// keys (this account from this address) is forgotten altogether: whoever got in needs no count there.
    func attemptSucceeded(_ attempt: Attempt, keys: [ThrottleKey], now: Date) async throws {
        try await pool.withTransaction { connection in
            for (key, before, counted) in attempt.counts {  // in the order they were locked
                if key == keys.first {
                    try await connection.query("DELETE FROM sign_in_throttle WHERE key = \(key.key)")
                } else if let current = try await Self.lockedState(of: key, now: now, on: connection) {
                    let refunded = key.policy.refundingFailure(current, before: before, counted: counted)
                    try await Self.update(key, to: refunded, on: connection)
                }
            }
        }
    }

    /// The key's row, locked for the rest of the transaction (made first when missing); nil while it counts nothing.
    /// One upsert, never an insert and then a select: a sign-in that succeeds in between deletes the row it just
    /// inserted or found.
    private static func lockedState(of key: ThrottleKey, now: Date, on connection: isolated PostgresConnection)
        async throws -> ThrottlePolicy.State?
    {
        let current = try state(await connection.query("""
            INSERT INTO sign_in_throttle AS t (key, failures, window_started_at) VALUES (\(key.key), 0, \(now))
            ON CONFLICT (key) DO UPDATE SET failures = t.failures
            RETURNING failures, window_started_at, blocked_until
            """).single())
        return current.failures == 0 && current.blockedUntil == nil ? nil : current
    }

    private static func update(_ key: ThrottleKey, to state: ThrottlePolicy.State,
                               on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            UPDATE sign_in_throttle
               SET failures = \(state.failures), window_started_at = \(state.windowStartedAt),
                   blocked_until = \(state.blockedUntil)
             WHERE key = \(key.key)
            """)
    }

    /// Drops rows whose window has passed and that block nothing. Rows are locked in key order, as sign-ins lock
    /// them, and rows a sign-in holds are left for the next time: the two can never deadlock.
    func prune(now: Date, longestWindow: TimeInterval) async throws -> Int {
        try await pool.query("""
            DELETE FROM sign_in_throttle WHERE key IN (
                SELECT key FROM sign_in_throttle
                 WHERE window_started_at < \(now.addingTimeInterval(-longestWindow))
                   AND (blocked_until IS NULL OR blocked_until < \(now))
                 ORDER BY key FOR UPDATE SKIP LOCKED)
            """).affectedRows
    }

    private static func state(_ row: PostgresRow) throws -> ThrottlePolicy.State {
        let (failures, started, blockedUntil) = try row.decode((Int, Date, Date?).self)
        return ThrottlePolicy.State(failures: failures, windowStartedAt: started, blockedUntil: blockedUntil)
    }
}
