import Foundation
import Logging
import Postgres
import ServiceLifecycle

/// Delivers the outbox on every replica: for each mail due, in one transaction holding its row, it finds the account
/// of the address, mints the link's token (replacing the last one), sends the mail over SMTP and deletes the row. A
/// failed delivery rolls all of it back and the mail waits (doubling, up to `MAIL_RETRY_MAX_SECONDS`), so a mail
/// server outage delays mail and loses none. A server that refuses the mail for good (5xx) drops it.
///
/// A delivery that the server accepted just before the transaction failed is sent again later, with a new link that
/// replaces the first: mail is delivered at least once, and only the newest link works.
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

    private enum Outcome: Sendable {
        case sent(LinkPurpose), nobodyToMail(LinkPurpose)
    }

    /// A delivery that failed, with the mail it was for: thrown out of the transaction so that it rolls back.
    private struct DeliveryFailure: Error {
        var mail: OutboxMail
        var error: any Error
    }

    /// Handles the mail that is due first; false when none is due at `now`.
    func deliverNext(now: Date) async throws -> Bool {
        let outcome: Outcome?
        do {
            outcome = try await outbox.withNextDue(now: now, timeout: configuration.smtp.timeout + .seconds(10)) {
                mail, connection in
                try await deliver(mail, now: now, on: connection)
            }
        } catch let failure as DeliveryFailure {
            try await handle(failure)
            return true
        }
        switch outcome {
        case nil: return false
        case .sent(let purpose): counters.countMail(purpose, "sent")
        case .nobodyToMail(let purpose): counters.countMail(purpose, "no-account")
        }
        return true
    }

    private func deliver(_ mail: OutboxMail, now: Date, on connection: isolated PostgresConnection) async throws
        -> Outcome {
        guard let recipient = try await AccountStore.recipient(email: mail.email, on: connection),
              mail.purpose != .emailVerification || !recipient.emailVerified
        else {
            try await MailOutbox.remove(mail, on: connection)
            return .nobodyToMail(mail.purpose)
        }
        let token = LinkToken.generate(for: recipient.id)
        let lifetime = configuration.lifetime(of: mail.purpose)
        try await LinkTokens.replace(with: token, for: mail.purpose, issuedAt: now,
                                     expiresAt: now.addingTimeInterval(lifetime), on: connection)
        let link = AccountMail.link(for: mail.purpose, token: token, publicBaseURL: configuration.publicBaseURL)
        let text = AccountMail(purpose: mail.purpose, link: link, validFor: lifetime)
        do {
            try await smtp.send(MailMessage(from: configuration.from, to: mail.email, subject: text.subject,
                                            text: text.text))
        } catch {
            throw DeliveryFailure(mail: mail, error: error)
        }
        try await MailOutbox.remove(mail, on: connection)
        return .sent(mail.purpose)
    }

    /// Logs name the mail's id and purpose, never its address or link.
    private func handle(_ failure: DeliveryFailure) async throws {
        let mail = failure.mail
        let metadata: Logger.Metadata = [
            "mail_id": "\(mail.id)", "purpose": "\(mail.purpose.rawValue)", "attempts": "\(mail.attempts + 1)",
            "error": "\(failure.error)",
        ]
        if let smtpError = failure.error as? SMTPError, smtpError.isPermanent {
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
                                  error: String(describing: failure.error))
    }
}
