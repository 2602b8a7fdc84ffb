import Foundation

/// So many requests per window for one key, for work every request costs whether or not it succeeds: mails asked
/// for, sign-ups. Unlike ``ThrottlePolicy`` (failed passwords, blocks that double) a refused request counts nothing,
/// and its `Retry-After` is the end of the window: a client that waits as told is admitted, so obeying the header
/// never makes the wait longer.
struct RequestLimit: Sendable, Equatable {
    var allowance: Int
    var window: TimeInterval

    static func perHour(_ allowance: Int) -> RequestLimit { RequestLimit(allowance: allowance, window: 3600) }

    enum Decision: Sendable, Equatable {
        /// Admitted; the key's state with this request counted.
        case admitted(ThrottlePolicy.State)
        /// Refused until the window ends, this many seconds from now; nothing counted.
        case refused(retryAfter: TimeInterval)
    }

    /// Whether one more request at `now` fits the key's window (a window that has passed starts again).
    func decide(_ state: ThrottlePolicy.State?, now: Date) -> Decision {
        var current = state ?? ThrottlePolicy.State(failures: 0, windowStartedAt: now, blockedUntil: nil)
        if now.timeIntervalSince(current.windowStartedAt) >= window {
            current = ThrottlePolicy.State(failures: 0, windowStartedAt: now, blockedUntil: nil)
        }
        guard current.failures < allowance else {
            return .refused(retryAfter: current.windowStartedAt.addingTimeInterval(window).timeIntervalSince(now))
        }
        current.failures += 1
        return .admitted(current)
    }
}

/// How many mails may be asked for per hour: to one address from one client (only that client's own requests
/// count, so nobody can use up the owner's), and from one client to any addresses.
struct MailLimits: Sendable, Equatable {
    var perRecipientAndClient: RequestLimit
    var perClient: RequestLimit
}
