import Foundation

/// How long the client waits before trying again what failed on the way (a queued write, the live changes stream):
/// exponential backoff with jitter, capped, the server's `Retry-After` honoured. Nothing is ever given up on for
/// failing: a write waits until the server takes it or refuses it, and the stream until it connects. Each wait is cut
/// short when the network returns, the app comes to the foreground (``FavoriteMeClient/networkDidReturn()``,
/// ``FavoriteMeClient/appDidBecomeActive()``), or the app asks (``FavoriteMeClient/sendPendingWrites()``).
public struct RetryPolicy: Sendable, Hashable {
    /// The wait after the first failure; each later one doubles it, up to ``longestDelay``.
    public var firstDelay: TimeInterval
    /// The longest wait between two attempts, however many failed: a phone back in coverage after an hour tries
    /// again within this time even if nobody tells the client the network returned.
    public var longestDelay: TimeInterval

    public init(firstDelay: TimeInterval = 1, longestDelay: TimeInterval = 180) {
        self.firstDelay = max(0, firstDelay)
        self.longestDelay = max(self.firstDelay, longestDelay)
    }

    /// How long to wait after `failures` failed attempts in a row (1 or more): `firstDelay` doubled per failure, at
    /// most `longestDelay`, with "equal jitter" (half fixed, half random in `jitter` 0…1) so that phones that failed
    /// together do not retry together. The server's `Retry-After` wins when it gave one (a queued write keeps it even
    /// past `longestDelay`: the server knows when it will take the write).
    public func delay(afterFailures failures: Int, retryAfter: Int? = nil, jitter: Double) -> TimeInterval {
        if let retryAfter { return TimeInterval(max(0, retryAfter)) }
        let exponential = min(longestDelay, firstDelay * pow(2, Double(min(max(failures, 1), 62) - 1)))
        return exponential / 2 + exponential / 2 * min(max(jitter, 0), 1)
    }
}

/// What an attempt to send a queued write came to.
enum AttemptVerdict: Equatable {
    /// The server applied it (or had, and said so again for its key).
    case applied
    /// It may pass later (no network, lost on the way, 408, 429, 5xx, an answer that is not the API's): it waits,
    /// its heart drawn, and is tried again after a backoff (the server's `Retry-After` when it gave one).
    case retry(after: Int?)
    /// The server refused it for good: dropped, its heart rolled back.
    case rejected(APIProblem)
    /// The session it belongs to is not the device's now, or the send was cancelled: wait for that user's session.
    case stop

    init(_ error: any Error) {
        switch error as? FavoriteMeError {
        case .offline?, .transport?, .unexpectedAnswer?: self = .retry(after: nil)
        case .refused(let problem)? where problem.isFinal: self = .rejected(problem)
        case .refused(let problem)? where problem.status == 401: self = .stop
        case .refused(let problem)?: self = .retry(after: problem.retryAfter)
        case .signedOut?, .storage?, nil: self = .stop
        }
    }
}
