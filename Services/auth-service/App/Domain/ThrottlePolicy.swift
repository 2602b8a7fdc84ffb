import Foundation

/// How failed sign-ins slow an attacker down without ever locking a real user out for good.
///
/// Each key (an account, or a client address) counts failures in a window. Past the allowance, the key is blocked
/// for a time that doubles with each further failure, capped, and the count forgets itself once the window passes.
/// A blocked key answers 429 with `Retry-After` before any password is checked. Every check is counted as a failure
/// before it runs and taken back when the password was right, so parallel guesses cannot all slip through a check
/// made before any of them failed.
struct ThrottlePolicy: Sendable, Equatable {
    /// Failures tolerated in one window before blocking starts.
    var allowance: Int
    var window: TimeInterval
    var firstBlock: TimeInterval
    var longestBlock: TimeInterval

    /// One account from one address: a person mistyping a few times is never slowed, a guesser soon is. An attacker
    /// elsewhere blocks only themselves, not the account's owner.
    static let accountFromAddress = ThrottlePolicy(allowance: 5, window: 15 * 60, firstBlock: 30, longestBlock: 15 * 60)
    /// One account from anywhere: stops guessing spread over many addresses, high enough that one attacker cannot
    /// trip it alone, and never longer than the cap.
    static let account = ThrottlePolicy(allowance: 50, window: 15 * 60, firstBlock: 60, longestBlock: 15 * 60)
    /// One account from a device that signed in to it before (it holds a device credential, OWASP's "device cookie"):
    /// throttled on its own, so strangers failing from its address or against its account never slow it, while a
    /// stolen credential guesses no faster than one person mistyping.
    static let knownDevice = ThrottlePolicy(allowance: 5, window: 15 * 60, firstBlock: 30, longestBlock: 15 * 60)
    /// One address against any accounts (credential stuffing). Several people may share an address (a campus, a
    /// carrier NAT), so it allows more than the per-account pair.
    static let address = ThrottlePolicy(allowance: 30, window: 15 * 60, firstBlock: 30, longestBlock: 15 * 60)

    struct State: Sendable, Equatable {
        var failures: Int
        var windowStartedAt: Date
        var blockedUntil: Date?
    }

    /// Seconds until `state` may try again, or nil when it is not blocked at `now`.
    func retryAfter(_ state: State?, now: Date) -> TimeInterval? {
        guard let until = state?.blockedUntil, until > now else { return nil }
        return until.timeIntervalSince(now)
    }

    /// `state` after one more failure at `now`.
    func recordingFailure(_ state: State?, now: Date) -> State {
        var next = state ?? State(failures: 0, windowStartedAt: now, blockedUntil: nil)
        if now.timeIntervalSince(next.windowStartedAt) >= window {
            next = State(failures: 0, windowStartedAt: now, blockedUntil: nil)
        }
        next.failures += 1
        let excess = next.failures - allowance
        if excess > 0 {
            let doubling = min(excess - 1, 20)  // 2^20 × firstBlock is far past any cap
            let block = min(firstBlock * Double(1 << doubling), longestBlock)
            next.blockedUntil = now.addingTimeInterval(block)
        }
        return next
    }

    /// `current` with one failure taken back: the password check it was counted for (before it ran) succeeded.
    /// `before` and `counted` are the states just before and just after that count. When nothing changed the block
    /// since, it goes back to what it was before the count: a right password never starts or lengthens a block. A
    /// block set by a failure counted in between stays.
    func refundingFailure(_ current: State, before: State?, counted: State) -> State {
        var next = current
        next.failures = max(0, next.failures - 1)
        if Self.sameInstant(current.blockedUntil, counted.blockedUntil) { next.blockedUntil = before?.blockedUntil }
        return next
    }

    /// Equal to the millisecond: a time read back from PostgreSQL keeps microseconds, not every bit of a `Date`.
    private static func sameInstant(_ a: Date?, _ b: Date?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case let (a?, b?): abs(a.timeIntervalSince(b)) < 0.001
        default: false
        }
    }

    /// When a row can be forgotten: its window is over and it is not blocked.
    func isStale(_ state: State, now: Date) -> Bool {
        now.timeIntervalSince(state.windowStartedAt) >= window && retryAfter(state, now: now) == nil
    }
}
