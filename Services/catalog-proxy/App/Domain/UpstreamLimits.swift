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
