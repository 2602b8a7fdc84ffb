import Foundation

/// How the queue retries a write whose attempt failed: exponential backoff with jitter, `Retry-After` honoured, a
/// bounded number of failures before the write is parked.
public struct RetryPolicy: Sendable, Equatable {
    /// Failed attempts before a write is parked. Attempts made with no network at all do not count: a phone that is
    /// offline for a week keeps its writes waiting, not parked.
    public var attempts: Int
    /// The wait after the first failure; each later one doubles it.
    public var firstDelay: TimeInterval
    /// The longest wait inside one flush. A longer one (a large `Retry-After`) ends the flush instead, and a later
    /// flush is scheduled for when the wait is over.
    public var longestDelay: TimeInterval

    public init(attempts: Int = 6, firstDelay: TimeInterval = 1, longestDelay: TimeInterval = 30) {
        self.attempts = max(1, attempts)
        self.firstDelay = firstDelay
        self.longestDelay = longestDelay
    }

    /// How long to wait after `failures` failed attempts (1 or more): `Retry-After` when the server gave one,
    /// else `firstDelay` doubled per failure, with "equal jitter" (half fixed, half random in `jitter` 0…1) so that
    /// phones that failed together do not retry together.
    public func delay(afterFailures failures: Int, retryAfter: Int?, jitter: Double) -> TimeInterval {
        if let retryAfter { return TimeInterval(max(0, retryAfter)) }
        let exponential = firstDelay * pow(2, Double(min(max(failures, 1), 30) - 1))
        return exponential / 2 + exponential / 2 * min(max(jitter, 0), 1)
    }
}

/// What an attempt to send a queued write came to.
enum AttemptVerdict: Equatable {
    /// The server applied it (or had, and said so again for its key).
    case applied
    /// The request never left the device (no network, nothing listening): wait for the network, uncounted.
    case offline
    /// It may pass later (lost on the way, 408, 429, 5xx, an answer that is not the API's): counted and retried.
    case retry(after: Int?)
    /// The server refused it for good: dropped, its heart rolled back.
    case rejected(APIProblem)
    /// The session it belongs to is not the device's now: wait for that user to sign in.
    case stop

    init(_ error: FavoriteMeError) {
        switch error {
        case .offline: self = .offline
        case .transport, .unexpectedAnswer: self = .retry(after: nil)
        case .refused(let problem) where problem.isFinal: self = .rejected(problem)
        case .refused(let problem) where problem.status == 401: self = .stop
        case .refused(let problem): self = .retry(after: problem.retryAfter)
        case .signedOut, .storage: self = .stop
        }
    }
}
