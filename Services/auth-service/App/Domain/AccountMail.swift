import Foundation

/// The mails auth-service sends, as text: what a link is for, where it leads and how long it works.
struct AccountMail: Sendable, Equatable {
    var subject: String
    var text: String

    /// The page a link opens: auth-service serves it through the gateway, and apps that claim the path (universal
    /// links) take the token from it instead.
    static func linkPath(for purpose: LinkPurpose) -> String {
        switch purpose {
        case .passwordReset: "/account/reset-password"
        case .emailVerification: "/account/verify-email"
        }
    }

    static func link(for purpose: LinkPurpose, token: LinkToken, publicBaseURL: String) -> String {
        let base = publicBaseURL.hasSuffix("/") ? String(publicBaseURL.dropLast()) : publicBaseURL
        return "\(base)\(linkPath(for: purpose))?token=\(token.text)"
    }

    init(purpose: LinkPurpose, link: String, validFor lifetime: TimeInterval) {
        let validity = Self.describe(lifetime)
        switch purpose {
        case .passwordReset:
            subject = "Reset your FavoriteMe password"
            text = """
                Someone (we hope you) asked to reset the password of your FavoriteMe account.

                To choose a new password, open this link within \(validity):

                \(link)

                The link works once. Setting a new password signs you out on every device.
                If you did not ask for this, ignore this mail: your password stays as it is.
                """
        case .emailVerification:
            subject = "Confirm your email for FavoriteMe"
            text = """
                Welcome to FavoriteMe. To confirm that this address is yours, open this link within \(validity):

                \(link)

                If you did not create an account, ignore this mail.
                """
        }
    }

    /// "30 minutes", "1 hour", "2 days": the lifetime in the largest whole unit.
    static func describe(_ lifetime: TimeInterval) -> String {
        let minutes = Int(lifetime / 60)
        func plural(_ count: Int, _ unit: String) -> String { "\(count) \(unit)\(count == 1 ? "" : "s")" }
        if minutes >= 1440, minutes % 1440 == 0 { return plural(minutes / 1440, "day") }
        if minutes >= 60, minutes % 60 == 0 { return plural(minutes / 60, "hour") }
        return plural(max(1, minutes), "minute")
    }

    /// How long an undelivered mail waits before its next attempt: doubling from one second, at most `longest`, with
    /// up to a quarter of random spread so that replicas retrying after one outage do not all come back at once.
    static func retryDelay(afterAttempts attempts: Int, longest: TimeInterval,
                           jitter: Double = Double.random(in: 0...0.25)) -> TimeInterval {
        let doubling = Double(1 << min(max(attempts - 1, 0), 20))
        let delay = min(doubling, longest)
        return delay - delay * jitter
    }
}
