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
        publicBaseURL = settings.baseURL("public.baseUrl", default: "http://127.0.0.1:8080",
            help: """
            Where phones and browsers reach the gateway; mailed links start with it \
            (`/account/reset-password?token=…`).
            """)
        let sender = settings.string("mail.from", default: "FavoriteMe <no-reply@favoriteme.invalid>",
            help: "The sender of every mail: an address, or a name and `<address>`.")
        if let parsed = MailAddress(parsing: sender) {
            from = parsed
        } else {
            settings.reject("mail.from", "must be an address, or a name and <address>")
            from = MailAddress(name: nil, address: "no-reply@favoriteme.invalid")
        }
        smtp = SMTPSettings(
            host: settings.string("smtp.host", default: "127.0.0.1",
                help: "The SMTP server mail is handed to."),
            port: settings.int("smtp.port", default: 1025, in: 1...65_535,
                help: "Its port (a submission port such as 587 with a real provider)."),
            security: settings.choice("smtp.security", default: SMTPSettings.Security.startTLSIfOffered,
                help: """
                `starttls` refuses to send unless the server offers STARTTLS; `none` never upgrades. Certificates \
                are verified. A password is only ever sent over TLS, unless this is `none`.
                """),
            username: settings.optionalString("smtp.username",
                help: "With `SMTP_PASSWORD` (both or neither): AUTH PLAIN or LOGIN."),
            password: settings.optionalString("smtp.password", isSecret: true,
                help: """
                With `SMTP_USERNAME` (both or neither). Only ever sent over TLS, unless `SMTP_SECURITY` is `none`.
                """),
            trustedCertificatesFile: settings.optionalString("smtp.caFile",
                help: "PEM certificates trusted besides the system's, for a server with a private CA."),
            heloName: "localhost",
            timeout: .seconds(settings.int("smtp.timeoutSeconds", default: 30, in: 1...600,
                help: "Bound on one delivery (connect to QUIT)."))
        )
        if (smtp.username == nil) != (smtp.password == nil) {
            settings.reject("smtp.username", "and SMTP_PASSWORD must be set together")
        }
        resetLifetime = TimeInterval(settings.int("passwordReset.ttlSeconds", default: 1800, in: 60...86_400,
            help: "How long a reset link works from its mail being sent."))
        verificationLifetime = TimeInterval(
            settings.int("emailVerification.ttlSeconds", default: 86_400, in: 60...(30 * 86_400),
                help: "How long a verification link works."))
        pollInterval = .milliseconds(settings.int("mail.pollMs", default: 500, in: 10...60_000,
            help: "How often each replica looks for mail to send."))
        longestRetryDelay = TimeInterval(settings.int("mail.retryMaxSeconds", default: 300, in: 1...86_400,
            help: "Longest wait between two attempts at one mail (the waits double from 1 s)."))
        limits = MailLimits(
            perRecipientAndClient: .perHour(settings.int("mail.requestsPerEmail", default: 3, in: 1...100_000,
                help: """
                Mails one client (an IPv6 /64) may ask for per hour to one address; past it 429 `mail-throttled` \
                with the seconds until the window ends, nothing queued. Sign-up's verification mail counts too.
                """)),
            perClient: .perHour(settings.int("mail.requestsPerClient", default: 30, in: 1...1_000_000,
                help: """
                Mails one client (an IPv6 /64) may ask for per hour to any address; past it 429 `mail-throttled`, \
                the same way.
                """))
        )
    }

    func lifetime(of purpose: LinkPurpose) -> TimeInterval {
        switch purpose {
        case .passwordReset: resetLifetime
        case .emailVerification: verificationLifetime
        }
    }
}
