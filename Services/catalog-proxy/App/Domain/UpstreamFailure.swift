import Foundation

/// Why an upstream call produced no usable response. Each maps to its own problem type
/// (`Routes/CatalogProblems.swift`).
enum UpstreamFailure: Error, Equatable {
    /// Our limiter or the upstream's quota (429): retry after the given seconds.
    case rateLimited(retryAfter: TimeInterval)
    /// The calling user has spent their share of the upstream's budget (``UserShare``): that user retries later.
    case userShareSpent(retryAfter: TimeInterval)
    /// The breaker is open after repeated failures.
    case circuitOpen(retryAfter: TimeInterval)
    case timeout
    /// Connection refused or dropped, a 5xx, or an unexpected status.
    case failed(String)
    /// The body could not be read as the source documents it.
    case malformedBody
    /// The upstream says the item does not exist.
    case notFound
    /// The upstream refused our request (a 4xx other than 404 and 429: a bug or a revoked key), or redirected it where
    /// we do not follow: not worth a retry. The status, and why.
    case rejected(Int, String)
    /// The daily quota's ledger (PostgreSQL) could not be reached, so no call may go out; with the database's error.
    case quotaLedgerUnavailable(String)
}
