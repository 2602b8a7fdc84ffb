import Configuration
import Foundation
import ServiceKit

/// How auth-service sends mail and what its links promise. Every key is in docs/operations.md's table.
///
/// - `PUBLIC_BASE_URL` (default `http://127.0.0.1:8080`): where the gateway is reached from a phone or a browser;
///   links in mails start with it
/// - `MAIL_FROM` (default `FavoriteMe <no-reply@favoriteme.invalid>`)
/// - `SMTP_HOST` (default `127.0.0.1`), `SMTP_PORT` (default 1025), `SMTP_SECURITY` (`starttls-if-offered`, `starttls`
///   to require it, or `none`), `SMTP_USERNAME`, `SMTP_PASSWORD`, `SMTP_CA_FILE` (PEM roots trusted besides the
///   system's), `SMTP_TIMEOUT_SECONDS` (default 30)
/// - `PASSWORD_RESET_TTL_SECONDS` (default 1800), `EMAIL_VERIFICATION_TTL_SECONDS` (default 86400)
/// - `MAIL_POLL_MS` (default 500): how often each replica looks for mail to send
/// - `MAIL_RETRY_MAX_SECONDS` (default 300): the longest wait between two attempts at one mail
/// - `MAIL_REQUESTS_PER_EMAIL` (default 3): mails to one address asked for per hour by one client (an IPv6 /64);
///   `MAIL_REQUESTS_PER_CLIENT` (default 30): mails asked for per hour by one client, to any addresses
struct MailConfiguration: Sendable {
    var publicBaseURL: String
    var from: MailAddress
    var smtp: SMTPSettings
    var resetLifetime: TimeInterval
    var verificationLifetime: TimeInterval
    var pollInterval: Duration
    var longestRetryDelay: TimeInterval
    var limits: MailLimits

    init(settings: inout StrictSettings) {
        publicBaseURL = settings.baseURL("public.baseUrl", default: "http://127.0.0.1:8080")
        let sender = settings.string("mail.from", default: "FavoriteMe <no-reply@favoriteme.invalid>")
        if let parsed = MailAddress(parsing: sender) {
            from = parsed
        } else {
            settings.reject("mail.from", "must be an address, or a name and <address>")
            from = MailAddress(name: nil, address: "no-reply@favoriteme.invalid")
        }
        smtp = SMTPSettings(
            host: settings.string("smtp.host", default: "127.0.0.1"),
            port: settings.int("smtp.port", default: 1025, in: 1...65_535),
            security: settings.choice("smtp.security", default: SMTPSettings.Security.startTLSIfOffered),
            username: settings.optionalString("smtp.username"),
            password: settings.optionalString("smtp.password", isSecret: true),
            trustedCertificatesFile: settings.optionalString("smtp.caFile"),
            heloName: "localhost",
            timeout: .seconds(settings.int("smtp.timeoutSeconds", default: 30, in: 1...600))
        )
        if (smtp.username == nil) != (smtp.password == nil) {
            settings.reject("smtp.username", "and SMTP_PASSWORD must be set together")
        }
        resetLifetime = TimeInterval(settings.int("passwordReset.ttlSeconds", default: 1800, in: 60...86_400))
        verificationLifetime = TimeInterval(
            settings.int("emailVerification.ttlSeconds", default: 86_400, in: 60...(30 * 86_400)))
        pollInterval = .milliseconds(settings.int("mail.pollMs", default: 500, in: 10...60_000))
        longestRetryDelay = TimeInterval(settings.int("mail.retryMaxSeconds", default: 300, in: 1...86_400))
        limits = MailLimits(
            perRecipientAndClient: .perHour(settings.int("mail.requestsPerEmail", default: 3, in: 1...100_000)),
            perClient: .perHour(settings.int("mail.requestsPerClient", default: 30, in: 1...1_000_000))
        )
    }

    func lifetime(of purpose: LinkPurpose) -> TimeInterval {
        switch purpose {
        case .passwordReset: resetLifetime
        case .emailVerification: verificationLifetime
        }
    }
}
