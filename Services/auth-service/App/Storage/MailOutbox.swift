import Foundation
import Postgres

/// A mail asked for and not delivered yet, as a sender claimed it.
struct OutboxMail: Sendable, Equatable {
    var id: Int
    var purpose: LinkPurpose
    var email: String
    var attempts: Int
    /// The end of this sender's claim: the row's next attempt while it is being sent. A sender that outlived its
    /// claim finds another's there, and leaves the row alone.
    var claimedUntil: Date
}

/// SQL for `mail_outbox`.
struct MailOutbox: Sendable {
    let pool: DatabasePool

    /// Asks for a mail to `email`, inside the caller's transaction: it is sent once that commits, never before.
    static func enqueue(_ purpose: LinkPurpose, to email: String, now: Date,
                        on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            INSERT INTO mail_outbox (purpose, email, requested_at, next_attempt_at)
            VALUES (\(purpose.rawValue), \(email), \(now), \(now))
            """)
    }

    func enqueue(_ purpose: LinkPurpose, to email: String, now: Date) async throws {
        try await pool.withTransaction { connection in
            try await Self.enqueue(purpose, to: email, now: now, on: connection)
        }
    }

    /// Claims the mail that has waited longest among those due at `now`: in one transaction holding its row (other
    /// replicas skip it), runs `prepare` and moves the mail's next attempt `lease` ahead, so that no replica takes it
    /// while it is being sent and one that stops mid-send leaves it due again. nil when no mail is due.
    func claimNextDue<Result: Sendable>(
        now: Date, lease: TimeInterval,
        _ prepare: @Sendable (OutboxMail, isolated PostgresConnection) async throws -> Result
    ) async throws -> Result? {
        try await pool.withTransaction { connection in
            guard let row = try await connection.query("""
                SELECT id, purpose, email, attempts FROM mail_outbox
                 WHERE next_attempt_at <= \(now)
                 ORDER BY next_attempt_at, id LIMIT 1
                   FOR UPDATE SKIP LOCKED
                """).rows.first else { return nil }
            guard let purpose = LinkPurpose(rawValue: try row.decode(String.self, column: "purpose")) else {
                return nil
            }
            // From the moment the row is held, not from `now`: waiting for a session must not shorten the claim.
            let mail = OutboxMail(id: try row.decode(Int.self, column: "id"), purpose: purpose,
                                  email: try row.decode(String.self, column: "email"),
                                  attempts: try row.decode(Int.self, column: "attempts"),
                                  claimedUntil: Date().addingTimeInterval(lease))
            let result = try await prepare(mail, connection)
            try await connection.query("""
                UPDATE mail_outbox SET next_attempt_at = \(mail.claimedUntil) WHERE id = \(mail.id)
                """)
            return result
        }
    }

    /// Done with: delivered, or nobody to deliver to.
    static func remove(_ mail: OutboxMail, on connection: isolated PostgresConnection) async throws {
        try await connection.query("DELETE FROM mail_outbox WHERE id = \(mail.id)")
    }

    /// Takes back what the claim's `prepare` changed, in a transaction of its own, after a failed send: only while the
    /// claim is still this sender's (a sender that outlived it leaves the row to the one holding it now).
    func release(_ mail: OutboxMail, undoing prepared: @Sendable (isolated PostgresConnection) async throws -> Void)
        async throws {
        try await pool.withTransaction { connection in
            guard try await !connection.query("""
                SELECT 1 FROM mail_outbox WHERE id = \(mail.id) AND next_attempt_at = \(mail.claimedUntil) FOR UPDATE
                """).rows.isEmpty else { return }
            try await prepared(connection)
        }
    }

    /// Done with a mail this sender claimed (nothing, when its claim lapsed and another sender holds it).
    func remove(_ mail: OutboxMail) async throws {
        try await pool.query("DELETE FROM mail_outbox WHERE id = \(mail.id) AND next_attempt_at = \(mail.claimedUntil)")
    }

    /// A failed attempt of a mail this sender claimed: tried again at `next`.
    func postpone(_ mail: OutboxMail, until next: Date, error: String) async throws {
        try await pool.query("""
            UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = \(next), last_error = \(String(error.prefix(500)))
             WHERE id = \(mail.id) AND next_attempt_at = \(mail.claimedUntil)
            """)
    }
}
