import Contracts
import Foundation
import Postgres
import ServiceKit

/// A session about to be created by a sign-in.
struct NewSession: Sendable {
    var id: UUID
    var userID: UUID
    var deviceName: String?
    var userAgent: String?
    var clientAddress: String?
    var createdAt: Date
    var idleExpiresAt: Date
    var absoluteExpiresAt: Date
}

/// A session row locked for a refresh decision.
struct LockedSession: Sendable {
    var id: UUID
    var userID: UUID
    var state: SessionPolicy.State
    var rotationNonce: Data?
    /// The digest of the `Idempotency-Key` of the refresh that made the live generation, if it had one.
    var rotationKey: Data?
    var absoluteExpiresAt: Date { state.absoluteExpiresAt }
}

/// Why sessions end; stored with them for support and audit.
enum SessionEndReason: String, Sendable {
    case logout, loggedOutElsewhere = "logout-elsewhere", passwordChanged = "password-changed"
    case refreshTokenReused = "refresh-token-reused", expired, accountDeleted = "account-deleted"
    case endedFromSessionList = "ended-from-session-list", passwordReset = "password-reset"
}

/// SQL for `sessions`, `refresh_tokens` and `revoked_sessions`. Functions taking a connection run inside the
/// caller's transaction.
struct SessionStore: Sendable {
    let pool: DatabasePool

    static func create(_ session: NewSession, firstTokenDigest: Data, on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            INSERT INTO sessions (id, user_id, generation, device_name, user_agent, client_address, created_at,
                                  last_used_at, idle_expires_at, absolute_expires_at)
            VALUES (\(session.id), \(session.userID), 0, \(session.deviceName), \(session.userAgent),
                    \(session.clientAddress), \(session.createdAt), \(session.createdAt), \(session.idleExpiresAt),
                    \(session.absoluteExpiresAt))
            """)
        try await connection.query("""
            INSERT INTO refresh_tokens (digest, session_id, generation, issued_at)
            VALUES (\(firstTokenDigest), \(session.id), 0, \(session.createdAt))
            """)
    }

    /// The session and generation a refresh token was issued for, its row locked until the transaction ends.
    static func lockSession(forTokenDigest digest: Data, on connection: isolated PostgresConnection) async throws
        -> (session: LockedSession, presentedGeneration: Int)?
    {
        guard let row = try await connection.query("""
            SELECT s.id, s.user_id, \(raw: SessionPolicy.State.columns), s.rotation_nonce, s.rotation_key,
                   t.generation AS presented_generation
              FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
             WHERE t.digest = \(digest)
               FOR UPDATE OF s
            """).rows.first else { return nil }
        let session = LockedSession(id: try row.decode(UUID.self, column: "id"),
                                    userID: try row.decode(UUID.self, column: "user_id"),
                                    state: try SessionPolicy.State(row: row),
                                    rotationNonce: try row.decode(Data?.self, column: "rotation_nonce"),
                                    rotationKey: try row.decode(Data?.self, column: "rotation_key"))
        return (session, try row.decode(Int.self, column: "presented_generation"))
    }

    /// Moves the session to its next generation, whose token's digest is `nextDigest`; `key`: the digest of the
    /// refresh's `Idempotency-Key`, which a retry of it may present later.
    static func rotate(_ session: LockedSession, nextDigest: Data, nonce: Data, key: Data?, now: Date,
                       idleExpiresAt: Date, on connection: isolated PostgresConnection) async throws {
        let next = session.state.generation + 1
        try await connection.query("""
            INSERT INTO refresh_tokens (digest, session_id, generation, issued_at)
            VALUES (\(nextDigest), \(session.id), \(next), \(now))
            """)
        try await connection.query("""
            UPDATE sessions SET generation = \(next), rotation_nonce = \(nonce), rotation_key = \(key),
                   rotated_at = \(now), last_used_at = \(now), idle_expires_at = \(idleExpiresAt)
             WHERE id = \(session.id)
            """)
    }

    /// Ends the user's sessions that `scope` selects relative to `current`, and lists them as revoked so every
    /// service refuses their access tokens. Returns how many ended.
    @discardableResult
    static func end(userID: UUID, scope: LogoutScope, current: UUID?, reason: SessionEndReason, now: Date,
                    on connection: isolated PostgresConnection) async throws -> Int {
        let only: UUID? = scope == .current ? current : nil
        let except: UUID? = scope == .others ? current : nil
        return try await connection.query("""
            WITH ended AS (
                UPDATE sessions SET ended_at = \(now), end_reason = \(reason.rawValue)
                 WHERE user_id = \(userID) AND ended_at IS NULL
                   AND (\(only)::uuid IS NULL OR id = \(only)::uuid)
                   AND (\(except)::uuid IS NULL OR id <> \(except)::uuid)
                RETURNING id
            )
            INSERT INTO revoked_sessions (session_id, revoked_at)
            SELECT id, \(now) FROM ended
            ON CONFLICT (session_id) DO NOTHING
            """).affectedRows
    }

    /// Ends one session of the user by id; false when the user has no such live session.
    static func end(sessionID: UUID, userID: UUID, reason: SessionEndReason, now: Date,
                    on connection: isolated PostgresConnection) async throws -> Bool {
        try await end(userID: userID, scope: .current, current: sessionID, reason: reason, now: now, on: connection) == 1
    }

    /// Whether the session is live: not ended and not past either limit.
    func isLive(sessionID: UUID, userID: UUID, now: Date) async throws -> Bool {
        try await pool.query("""
            SELECT 1 FROM sessions
             WHERE id = \(sessionID) AND user_id = \(userID) AND ended_at IS NULL
               AND idle_expires_at > \(now) AND absolute_expires_at > \(now)
            """, prepare: true).rows.count == 1
    }

    func live(userID: UUID, current: UUID, now: Date) async throws -> [SessionSummary] {
        try await pool.query("""
            SELECT id, device_name, user_agent, created_at, last_used_at,
                   least(idle_expires_at, absolute_expires_at) AS expires_at
              FROM sessions
             WHERE user_id = \(userID) AND ended_at IS NULL
               AND idle_expires_at > \(now) AND absolute_expires_at > \(now)
             ORDER BY last_used_at DESC, id
            """).rows.map { row in
            let id = try row.decode(UUID.self, column: "id")
            return SessionSummary(id: id, deviceName: try row.decode(String?.self, column: "device_name"),
                                  userAgent: try row.decode(String?.self, column: "user_agent"),
                                  createdAt: try row.decode(Date.self, column: "created_at"),
                                  lastUsedAt: try row.decode(Date.self, column: "last_used_at"),
                                  expiresAt: try row.decode(Date.self, column: "expires_at"), current: id == current)
        }
    }

    /// Sessions ended after `since`, oldest first.
    func revoked(since: Date) async throws -> [UUID] {
        try await pool.query("""
            SELECT session_id FROM revoked_sessions WHERE revoked_at > \(since) ORDER BY revoked_at, session_id
            """, prepare: true).values(UUID.self)
    }

    /// Forgets what no longer matters: revocations older than any access token, and sessions past their absolute
    /// limit (with their refresh tokens) or ended long ago.
    func prune(revokedBefore: Date, sessionsBefore: Date) async throws -> (revocations: Int, sessions: Int) {
        let revocations = try await pool.query("DELETE FROM revoked_sessions WHERE revoked_at < \(revokedBefore)")
        let sessions = try await pool.query("""
            DELETE FROM sessions WHERE absolute_expires_at < \(sessionsBefore) OR ended_at < \(sessionsBefore)
            """)
        return (revocations.affectedRows, sessions.affectedRows)
    }
}

extension SessionStore {
    /// Who a refresh token belongs to, for logging out without a valid access token, and what presenting it means
    /// (``SessionPolicy/decide(presentedGeneration:state:now:)``, the same rules as a refresh).
    struct TokenOwner: Sendable {
        var user: AuthenticatedUser
        var presentedGeneration: Int
        var session: SessionPolicy.State
    }

    func owner(ofTokenDigest digest: Data) async throws -> TokenOwner? {
        try await pool.query("""
            SELECT s.user_id, s.id, t.generation AS presented_generation, \(raw: SessionPolicy.State.columns)
              FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
             WHERE t.digest = \(digest)
            """).rows.first.map { row in
            TokenOwner(user: AuthenticatedUser(userID: try row.decode(UUID.self, column: "user_id"),
                                               sessionID: try row.decode(UUID.self, column: "id")),
                       presentedGeneration: try row.decode(Int.self, column: "presented_generation"),
                       session: try SessionPolicy.State(row: row))
        }
    }
}

extension SessionPolicy.State {
    /// What a refresh decision needs of a session `s`, selected by the statements that read one.
    fileprivate static let columns: StaticString =
        "s.generation, s.rotated_at, s.idle_expires_at, s.absolute_expires_at, s.ended_at IS NOT NULL AS ended"

    fileprivate init(row: PostgresRow) throws {
        self.init(generation: try row.decode(Int.self, column: "generation"),
                  rotatedAt: try row.decode(Date?.self, column: "rotated_at"),
                  idleExpiresAt: try row.decode(Date.self, column: "idle_expires_at"),
                  absoluteExpiresAt: try row.decode(Date.self, column: "absolute_expires_at"),
                  ended: try row.decode(Bool.self, column: "ended"))
    }
}
