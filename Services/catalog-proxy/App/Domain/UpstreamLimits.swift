import Foundation

/// A token bucket: `rate` tokens a second, at most `burst` saved up. Pure; the caller supplies the time.
struct TokenBucket: Sendable, Equatable {
    let rate: Double
    let burst: Double
    private(set) var tokens: Double
    private(set) var updatedAt: Date

    init(rate: Double, burst: Double, now: Date) {
        self.rate = rate
        self.burst = burst
        tokens = burst
        updatedAt = now
    }

    /// Takes a token at `now`; when none is left, how long until one is.
    mutating func take(now: Date) -> TimeInterval? {
        tokens = min(burst, tokens + max(0, now.timeIntervalSince(updatedAt)) * rate)
        updatedAt = max(updatedAt, now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return (1 - tokens) / rate
    }
}

/// Per source: closed while calls succeed; open (every call refused at once) after `threshold` consecutive
/// failures, for `cooldown`; then half-open, letting one trial call through, whose outcome closes or reopens it.
struct CircuitBreaker: Sendable, Equatable {
    enum State: Sendable, Equatable { case closed, open(until: Date), halfOpen(since: Date) }

    let threshold: Int
    let cooldown: TimeInterval
    private(set) var state: State = .closed
    private(set) var consecutiveFailures = 0

    init(threshold: Int, cooldown: TimeInterval) {
        self.threshold = threshold
        self.cooldown = cooldown
    }

    /// When the breaker would refuse a call at `now`, how long until it lets one try; nil when it would let it go.
    /// Changes nothing: a caller with other limits to check asks this first, and calls ``admit(now:)`` last, so that a
    /// call refused elsewhere does not take the half-open breaker's one trial.
    func refusal(now: Date) -> TimeInterval? {
        switch state {
        case .closed: return nil
        case .halfOpen(let since):
            // One trial at a time; if it never reports back, another may go after a cooldown.
            let waited = now.timeIntervalSince(since)
            return waited >= cooldown ? nil : cooldown - waited
        case .open(let until):
            return now >= until ? nil : until.timeIntervalSince(now)
        }
    }

    /// Whether a call may go out at `now` (taking the trial when half-open); when not, how long until one may try.
    mutating func admit(now: Date) -> TimeInterval? {
        if let wait = refusal(now: now) { return wait }
        if state != .closed { state = .halfOpen(since: now) }
        return nil
    }

    mutating func recordSuccess() {
        state = .closed
        consecutiveFailures = 0
    }

    mutating func recordFailure(now: Date) {
        consecutiveFailures += 1
        if case .halfOpen = state {
            state = .open(until: now.addingTimeInterval(cooldown))
        } else if consecutiveFailures >= threshold {
            state = .open(until: now.addingTimeInterval(cooldown))
        }
    }
}

/// At most `calls` calls in any span of `window` seconds: a sliding window, as an upstream that says "5 calls a
/// minute" counts them, so a burst across a minute boundary cannot send twice the rate.
struct RollingLimit: Sendable, Equatable {
    let calls: Int
    let window: TimeInterval

    /// How long from `now` until one more call fits every limit, given the times of the calls already made (any
    /// order); nil when it fits now. A call made exactly `window` ago no longer counts. Times are compared in whole
    /// microseconds, the precision PostgreSQL keeps them in.
    static func wait(for limits: [RollingLimit], after calls: [Date], now: Date) -> TimeInterval? {
        func micros(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
        let nowMicros = micros(now)
        let sorted = calls.map(micros).sorted()
        var longest: Int64 = 0
        for limit in limits {
            let windowMicros = Int64((limit.window * 1_000_000).rounded())
            let recent = sorted.filter { $0 > nowMicros - windowMicros }
            guard recent.count >= limit.calls else { continue }
            // The call that has to leave the window before one more fits.
            let leaving = recent[recent.count - max(limit.calls, 1)]
            longest = max(longest, leaving + windowMicros - nowMicros)
        }
        return longest > 0 ? TimeInterval(longest) / 1_000_000 : nil
    }
}

/// What one user may spend of an upstream's shared budgets: `fraction` of each of its windows (never less than one
/// call), so that a user asking for ids nobody has seen is refused long before the upstream's budget is spent for
/// everyone. The per-second share is each replica's, as the shared per-second bucket is, and holds two calls where the
/// bucket does (a search and the detail tapped right after); the longer windows are counted for all replicas together.
struct UserShare: Sendable, Equatable {
    let rate: Double
    let burst: Double
    let rollingLimits: [RollingLimit]

    /// `dailyQuota` is the upstream's calendar-day quota; `rollingLimits` its sliding windows.
    init(fraction: Double, rate: Double, burst: Double, rollingLimits: [RollingLimit], dailyQuota: Int?) {
        func share(_ calls: Int) -> Int { max(1, Int((Double(calls) * fraction).rounded(.down))) }
        self.rate = rate * fraction
        self.burst = Double(max(share(Int(burst)), min(2, Int(burst))))
        var limits = rollingLimits.map { RollingLimit(calls: share($0.calls), window: $0.window) }
        if let dailyQuota { limits.append(RollingLimit(calls: share(dailyQuota), window: 86_400)) }
        self.rollingLimits = limits
    }
}
