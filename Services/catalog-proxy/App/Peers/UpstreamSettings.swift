import Foundation
import ServiceKit

/// How the proxy talks to one upstream.
struct UpstreamSettings: Sendable {
    /// Scheme and host (and port) only, from configuration; every path comes from the source.
    var baseURL: String
    /// Secret: sent as the query parameter `keyParameter`, never logged.
    var apiKey: String?
    /// The query parameter that carries the key (`apikey`, `api-key`, `key`).
    var keyParameter = "key"
    var requestsPerSecond: Double
    var burst: Double
    /// Calls allowed per UTC day (the upstream's quota), if it has one.
    var dailyQuota: Int?
    /// Sliding windows counted for every replica together (``RollingCallLedger``), for an upstream that counts calls
    /// over any span of its window (the NYT's 5 a minute and 500 a day).
    var rollingLimits: [RollingLimit] = []
    /// What one user may spend of the budgets above; nil for an upstream no user's request reaches.
    var userShare: UserShare?
    /// The redirects followed (by default none).
    var redirect = UpstreamRedirect(allowing: [])
    /// Bound on one attempt, connection to last byte (enforced around the whole attempt, body included).
    var attemptTimeout: Duration
    /// Attempts for one request: retries only on timeouts, connection failures and 5xx (all requests are GETs).
    var attempts: Int
    var breakerThreshold: Int
    var breakerCooldown: TimeInterval
    var maximumBodyBytes: Int
    /// How long a call may wait for our own rate limit to let it go, rather than be refused at once: for sources whose
    /// answers take many calls in a burst (a page of records), where a short wait beats a partial page.
    var queueWait: TimeInterval = 0
    /// Calls in flight to this upstream at once, per replica (fan-outs from many requests share it).
    var maximumConcurrentCalls = 64
}

/// How an upstream failure is named in the metrics.
extension UpstreamFailure {
    /// Why a call never left, for ``CatalogMetrics/refused(_:reason:)``; nil for an attempt's failure.
    var refusalReason: String? {
        switch self {
        case .rateLimited: "rate-limited"
        case .userShareSpent: "user-share"
        case .circuitOpen: "circuit-open"
        case .quotaLedgerUnavailable: "ledger-unavailable"
        default: nil
        }
    }

    /// What an attempt that left came to, for ``CatalogMetrics/upstreamAttempt(_:outcome:duration:)``.
    var attemptOutcome: String {
        switch self {
        case .rateLimited: "429"
        case .rejected(let status, _) where (300..<400).contains(status): "redirect-refused"
        case .rejected: "4xx"
        case .timeout: "timeout"
        case .failed(let reason) where reason.hasPrefix("status 5"): "5xx"
        case .malformedBody: "malformed"
        default: "error"
        }
    }
}
