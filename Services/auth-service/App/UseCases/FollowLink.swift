import Contracts
import Foundation
import Postgres

/// What following a mailed link does. The link pages' GET only ``check(_:for:)``s (a mail scanner opening it changes
/// nothing); the POSTs confirm.
struct FollowLink: Sendable {
    let pool: DatabasePool
    let hasher: PasswordHasher

    /// The token of a live link for `purpose`; throws ``AuthRefusal/invalidLinkToken`` or
    /// ``AuthRefusal/expiredLinkToken`` otherwise. Reads only.
    func check(_ text: String, for purpose: LinkPurpose) async throws -> LinkToken {
        guard let token = LinkToken(text: text) else { throw AuthRefusal.invalidLinkToken }
        let stored = try await pool.withSession { connection in
            try await LinkTokens.stored(for: token.accountID, purpose: purpose, forUpdate: false, on: connection)
        }
        try Self.require(token.check(against: stored, now: Date()))
        return token
    }

    /// `POST /v1/auth/password-reset/confirm`: the account of a live reset link gets `newPassword` (the sign-up
    /// rules apply). Every session and device credential of the account ends, the link is used up, and the email
    /// counts as verified: the mail reached its owner.
    func resetPassword(token text: String, to newPassword: String) async throws {
        // Checked before the password is hashed: a wrong link costs no bcrypt work.
        let token = try await check(text, for: .passwordReset)
        guard let account = try await pool.withSession({ connection in
            try await AccountStore.find(id: token.accountID, forUpdate: false, on: connection)
        }) else { throw AuthRefusal.invalidLinkToken }
        if let problem = PasswordPolicy.problem(with: newPassword, email: EmailAddress(stored: account.email)) {
            throw AuthRefusal.invalidFields([FieldError(field: "newPassword", message: problem)])
        }
        let hash = try await hasher.hash(newPassword)
        let now = Date()
        try await pool.withTransaction { connection in
            try await Self.useUp(token, for: .passwordReset, now: now, on: connection)
            try await AccountStore.updatePassword(id: account.id, hash: hash, changeKey: nil, now: now, on: connection)
            try await SessionStore.end(userID: account.id, scope: .global, current: nil, reason: .passwordReset,
                                       now: now, on: connection)
            try await KnownDevices.forgetAll(of: account.id, on: connection)
            try await AccountStore.markEmailVerified(id: account.id, now: now, on: connection)
        }
    }

    /// `POST /v1/auth/email-verification/confirm`: the account of a live verification link reads verified from now on
    /// (in `/me` and in the access tokens issued after).
    func verifyEmail(token text: String) async throws {
        guard let token = LinkToken(text: text) else { throw AuthRefusal.invalidLinkToken }
        let now = Date()
        try await pool.withTransaction { connection in
            try await Self.useUp(token, for: .emailVerification, now: now, on: connection)
            try await AccountStore.markEmailVerified(id: token.accountID, now: now, on: connection)
        }
    }

    /// Deletes the token when it is live, its row locked first: of two requests with the same link, one wins.
    private static func useUp(_ token: LinkToken, for purpose: LinkPurpose, now: Date,
                              on connection: isolated PostgresConnection) async throws {
        let stored = try await LinkTokens.stored(for: token.accountID, purpose: purpose, forUpdate: true, on: connection)
        try require(token.check(against: stored, now: now))
        try await LinkTokens.delete(for: token.accountID, purpose: purpose, on: connection)
    }

    private static func require(_ check: LinkToken.Check) throws {
        switch check {
        case .valid: return
        case .expired: throw AuthRefusal.expiredLinkToken
        case .invalid: throw AuthRefusal.invalidLinkToken
        }
    }
}
