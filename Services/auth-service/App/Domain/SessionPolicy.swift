import Foundation

/// How long sessions live and what presenting a refresh token does.
struct SessionPolicy: Sendable {
    /// A session not refreshed for this long ends (the app was not opened).
    var idleLifetime: TimeInterval
    /// A session ends this long after sign-in however often it is refreshed.
    var absoluteLifetime: TimeInterval
    /// A retried refresh of the token just exchanged, within this time, gets the same new pair instead of counting
    /// as reuse: a response lost on a flaky network must not sign the user out.
    var reuseGrace: TimeInterval
    /// A retried refresh of the token just exchanged that carries the `Idempotency-Key` of the refresh that exchanged
    /// it gets the same successor within this much longer time: an app suspended with its answer in flight retries
    /// when it runs again, hours later. Only the device that sent the refresh knows its key, so a copy of the token
    /// alone still counts as reuse past ``reuseGrace``.
    var retryWindow: TimeInterval = 30 * 86_400

    /// The stored state of a session that a refresh decision needs.
    struct State: Sendable, Equatable {
        var generation: Int
        var rotatedAt: Date?
        var idleExpiresAt: Date
        var absoluteExpiresAt: Date
        var ended: Bool
    }

    enum RefreshDecision: Sendable, Equatable {
        /// Issue the next generation.
        case rotate
        /// The previous token, retried within the grace window: answer with the current generation again.
        case replay
        /// The previous token, retried later with the key of the refresh that retired it (the answer was lost to a
        /// suspended app): the current generation's refresh token again, with a fresh access token.
        case recover
        /// A retired token: someone holds a copy. End the session.
        case reuse
        /// The session is over (ended, idle or past its absolute limit).
        case expired
    }

    /// What presenting a token of `presentedGeneration` for a session in `state` does at `now`; `sameKey`: the request
    /// carries the key of the refresh that retired that token.
    func decide(presentedGeneration: Int, state: State, now: Date, sameKey: Bool = false) -> RefreshDecision {
        if state.ended || now >= state.idleExpiresAt || now >= state.absoluteExpiresAt { return .expired }
        if presentedGeneration == state.generation { return .rotate }
        if presentedGeneration == state.generation - 1, let rotatedAt = state.rotatedAt {
            let elapsed = now.timeIntervalSince(rotatedAt)
            if elapsed <= reuseGrace { return .replay }
            if sameKey && elapsed <= retryWindow { return .recover }
        }
        return .reuse
    }

    /// The idle deadline after a use at `now`, never past the absolute one.
    func idleExpiry(after now: Date, absoluteExpiry: Date) -> Date {
        min(now.addingTimeInterval(idleLifetime), absoluteExpiry)
    }
}
