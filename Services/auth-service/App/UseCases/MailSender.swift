import Foundation
import Logging
import Postgres
import ServiceLifecycle

/// Delivers the outbox on every replica. For each mail due, one short transaction claims its row, finds the account
/// of the address and mints the link's token (replacing the last one); the mail then goes over SMTP with no database
/// connection held, and its row is deleted. The token is committed before anyone can read the mail, so a link works
/// the moment it arrives. A failed delivery puts the account's previous link back (the one in the person's inbox keeps
/// working) and leaves the mail waiting (doubling, up to `MAIL_RETRY_MAX_SECONDS`), so a mail server outage delays mail
/// and loses none; a server that refuses the mail for good (5xx) drops it.
///
/// A claim lasts past the SMTP timeout; a replica that stops between the server's acceptance and the row's deletion
/// leaves the mail to be sent again once its claim lapses, with a new link: mail is delivered at least once, and only
/// the newest link delivered works.
struct MailSender: Service {
    let outbox: MailOutbox
    let smtp: SMTPClient
    let configuration: MailConfiguration
    let counters: AuthCounters
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    while try await deliverNext(now: Date()) {}  // everything due, then a nap
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("mail outbox unreadable; retrying", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: configuration.pollInterval)
            }
        }
    }

    private enum Claim: Sendable {
        case send(Delivery), nobodyToMail(LinkPurpose)
    }

    /// A claimed mail, its new link's token, and the link it replaced.
    private struct Delivery: Sendable {
        var mail: OutboxMail
        var message: MailMessage
        var token: LinkToken
        var replaced: LinkTokens.Row?
    }

    /// Long enough that a send ends, one way or the other, before another replica may take its mail.
    private var claimDuration: TimeInterval { Double(configuration.smtp.timeout.components.seconds) + 60 }

    /// Handles the mail that is due first; false when none is due at `now`.
    func deliverNext(now: Date) async throws -> Bool {
        let claim = try await outbox.claimNextDue(now: now, lease: claimDuration) { mail, connection in
            try await prepare(mail, now: now, on: connection)
        }
        switch claim {
        case nil:
            return false
        case .nobodyToMail(let purpose):
            counters.countMail(purpose, "no-account")
        case .send(let delivery):
            do {
                try await smtp.send(delivery.message)
            } catch {
                try await outbox.release(delivery.mail) { connection in
                    try await LinkTokens.restore(delivery.replaced, replacing: delivery.token,
                                                 for: delivery.mail.purpose, on: connection)
                }
                try await handle(delivery.mail, failure: error)
                return true
            }
            try await outbox.remove(delivery.mail)
            counters.countMail(delivery.mail.purpose, "sent")
        }
        return true
    }

    private func prepare(_ mail: OutboxMail, now: Date, on connection: isolated PostgresConnection) async throws
        -> Claim {
        guard let recipient = try await AccountStore.recipient(email: mail.email, on: connection),
              mail.purpose != .emailVerification || !recipient.emailVerified
        else {
            try await MailOutbox.remove(mail, on: connection)
            return .nobodyToMail(mail.purpose)
        }
        let token = LinkToken.generate(for: recipient.id)
        let lifetime = configuration.lifetime(of: mail.purpose)
        let replaced = try await LinkTokens.replace(with: token, for: mail.purpose, issuedAt: now,
                                                    expiresAt: now.addingTimeInterval(lifetime), on: connection)
        let link = AccountMail.link(for: mail.purpose, token: token, publicBaseURL: configuration.publicBaseURL)
        let text = AccountMail(purpose: mail.purpose, link: link, validFor: lifetime)
        let message = MailMessage(from: configuration.from, to: mail.email, subject: text.subject, text: text.text)
        return .send(Delivery(mail: mail, message: message, token: token, replaced: replaced))
    }

    /// Logs name the mail's id and purpose, never its address or link.
    private func handle(_ mail: OutboxMail, failure: any Error) async throws {
        let metadata: Logger.Metadata = [
            "mail_id": "\(mail.id)", "purpose": "\(mail.purpose.rawValue)", "attempts": "\(mail.attempts + 1)",
            "error": "\(failure)",
        ]
        if let smtpError = failure as? SMTPError, smtpError.isPermanent {
            logger.error("mail refused for good by the SMTP server; dropped", metadata: metadata)
            counters.countMail(mail.purpose, "undeliverable")
            try await outbox.remove(mail)
            return
        }
        let delay = AccountMail.retryDelay(afterAttempts: mail.attempts + 1,
                                           longest: configuration.longestRetryDelay)
        logger.warning("mail not delivered; will retry", metadata: metadata.merging(
            ["retry_in_seconds": "\(Int(delay.rounded(.up)))"], uniquingKeysWith: { $1 }))
        counters.countMail(mail.purpose, "retrying")
        try await outbox.postpone(mail, until: Date().addingTimeInterval(delay),
                                  error: String(describing: failure))
    }
}
