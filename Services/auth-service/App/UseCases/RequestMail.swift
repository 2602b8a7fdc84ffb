import Foundation
import Postgres

/// `POST /v1/auth/password-reset` and `POST /v1/auth/email-verification`: a mail is asked for, counted against the
/// limits and queued; ``MailSender`` delivers it.
///
/// A reset request does the same work whether or not an account has the address (count, queue, commit), so neither
/// the answer nor its timing tells which addresses have accounts; the sender finds out, later and out of band.
struct RequestMail: Sendable {
    let outbox: MailOutbox
    let throttle: ThrottleStore
    let limits: MailLimits

    func passwordReset(for email: EmailAddress, clientAddress: String) async throws {
        try await admit(email.value, clientAddress: clientAddress)
        try await outbox.enqueue(.passwordReset, to: email.value, now: Date())
    }

    func verification(for account: Account, clientAddress: String) async throws {
        guard !account.emailVerified else { throw AuthRefusal.emailAlreadyVerified }
        try await admit(account.email, clientAddress: clientAddress)  // stored emails are normalized
        try await outbox.enqueue(.emailVerification, to: account.email, now: Date())
    }

    /// Counts a mail to `email` asked for by `clientAddress`; past a limit, 429 with the seconds until it lets the
    /// next one through. A refused request queues nothing, so it never replaces the link of an earlier mail.
    func admit(_ email: String, clientAddress: String) async throws {
        let keys = ThrottleKey.forMail(to: email, clientAddress: clientAddress, limits: limits)
        if let wait = try await throttle.admit(keys, now: Date()) { throw AuthRefusal.mailThrottled(retryAfter: wait) }
    }
}
