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
    /// its credential's throttle name), that device alone; from any other, the account from this client, the
    /// account, and the client. The email is stored only as a digest: the table must not become a list of addresses
    /// people typed.
    static func forSignIn(email: EmailAddress, clientAddress: String, knownDevice: String? = nil) -> [ThrottleKey] {
        if let knownDevice { return [ThrottleKey(key: "device:\(knownDevice)", policy: .knownDevice)] }
        let account = digest(of: email.value), client = network(of: clientAddress)
        return [
            ThrottleKey(key: "account-address:\(account):\(client)", policy: .accountFromAddress),
            ThrottleKey(key: "account:\(account)", policy: .account),
            ThrottleKey(key: "address:\(client)", policy: .address),
        ]
    }

    /// The limits a request for a mail counts against: the address it goes to from this client (as a digest, like
    /// sign-ins), and the client asking. Counted the same whether or not an account has the address.
    static func forMail(to email: String, clientAddress: String, limits: MailLimits) -> [Limited] {
        let client = network(of: clientAddress)
        return [
            Limited(key: "mail-to-from:\(digest(of: email)):\(client)", limit: limits.perRecipientAndClient),
            Limited(key: "mail-from:\(client)", limit: limits.perClient),
        ]
    }

    /// The limit a sign-up counts against: its client's.
    static func forSignUp(clientAddress: String, limit: RequestLimit) -> [Limited] {
        [Limited(key: "signup-from:\(network(of: clientAddress))", limit: limit)]
    }

    /// A key under a ``RequestLimit``.
    struct Limited: Sendable {
        var key: String
        var limit: RequestLimit
    }

    /// The part of a client address that names one client: an IPv4 address, or an IPv6 address's /64 (one host,
    /// or one home or phone, gets a whole /64 and can pick any address in it). An IPv4 address written as IPv6
    /// (`::ffff:a.b.c.d`) is that IPv4 address.
    static func network(of clientAddress: String) -> String {
        guard let bytes = TrustedProxies.bytes(of: clientAddress), bytes.count == 16 else { return clientAddress }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes.suffix(4).map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
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
                states.append((key, try await Self.lockedState(of: key.key, now: now, on: connection)))
            }
            if let longest = states.compactMap({ $0.key.policy.retryAfter($0.state, now: now) }).max() {
                return .blocked(retryAfter: longest)
            }
            var attempt = Attempt(counts: [])
            for (key, state) in states {
                let counted = key.policy.recordingFailure(state, now: now)
                try await Self.update(key.key, to: counted, on: connection)
                attempt.counts.append((key, state, counted))
            }
            return .counted(attempt)
        }
    }

    /// Counts one request against each of `keys`' limits, or none when one of them is full: then the seconds until
    /// that one's window ends (the longest of them). The rows are locked in key order, as ``beginAttempt(_:now:)``
    /// locks them, so concurrent requests on every replica are counted one after another.
    func admit(_ keys: [ThrottleKey.Limited], now: Date) async throws -> TimeInterval? {
        try await pool.withTransaction { connection in
            var decided: [(key: ThrottleKey.Limited, decision: RequestLimit.Decision)] = []
            for limited in keys.sorted(by: { $0.key < $1.key }) {
                let state = try await Self.lockedState(of: limited.key, now: now, on: connection)
                decided.append((limited, limited.limit.decide(state, now: now)))
            }
            let waits = decided.compactMap { if case .refused(let wait) = $0.decision { wait } else { nil } }
            if let longest = waits.max() { return longest }
            for case (let limited, .admitted(let counted)) in decided {
                try await Self.update(limited.key, to: counted, on: connection)
            }
            return nil
        }
    }

    /// Takes back the failure ``beginAttempt(_:now:)`` counted: the password was right. The first of the attempt's
    /// keys (this account from this address) is forgotten altogether: whoever got in needs no count there.
    func attemptSucceeded(_ attempt: Attempt, keys: [ThrottleKey], now: Date) async throws {
        try await pool.withTransaction { connection in
            for (key, before, counted) in attempt.counts {  // in the order they were locked
                if key == keys.first {
                    try await connection.query("DELETE FROM sign_in_throttle WHERE key = \(key.key)")
                } else if let current = try await Self.lockedState(of: key.key, now: now, on: connection) {
                    let refunded = key.policy.refundingFailure(current, before: before, counted: counted)
                    try await Self.update(key.key, to: refunded, on: connection)
                }
            }
        }
    }

    /// The key's row, locked for the rest of the transaction (made first when missing); nil while it counts nothing.
    /// One upsert, never an insert and then a select: a sign-in that succeeds in between deletes the row it just
    /// inserted or found.
    private static func lockedState(of key: String, now: Date, on connection: isolated PostgresConnection)
        async throws -> ThrottlePolicy.State?
    {
        let current = try state(await connection.query("""
            INSERT INTO sign_in_throttle AS t (key, failures, window_started_at) VALUES (\(key), 0, \(now))
            ON CONFLICT (key) DO UPDATE SET failures = t.failures
            RETURNING failures, window_started_at, blocked_until
            """).single())
        return current.failures == 0 && current.blockedUntil == nil ? nil : current
    }

    private static func update(_ key: String, to state: ThrottlePolicy.State,
                               on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            UPDATE sign_in_throttle
               SET failures = \(state.failures), window_started_at = \(state.windowStartedAt),
                   blocked_until = \(state.blockedUntil)
             WHERE key = \(key)
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
        ThrottlePolicy.State(failures: try row.decode(Int.self, column: "failures"),
                             windowStartedAt: try row.decode(Date.self, column: "window_started_at"),
                             blockedUntil: try row.decode(Date?.self, column: "blocked_until"))
    }
}
