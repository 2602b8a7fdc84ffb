import Contracts
import HTTPTypes
import Foundation
import ServiceKit

/// catalog-proxy's upstream failures as clients get them: its one place that maps errors to problems.
extension UpstreamFailure: ProblemConvertible {
    var problem: ServiceProblem {
        func retryAfter(_ seconds: TimeInterval) -> String { String(max(1, Int(seconds.rounded(.up)))) }
        switch self {
        case .notFound:
            return ServiceProblem(.notFound, .notFound, "The catalog has no item with this id.")
        case .rateLimited(let wait):
            return ServiceProblem(.serviceUnavailable, .upstreamRateLimited,
                                  "The catalog's request budget is spent for now; retry later.",
                                  headers: [.retryAfter: retryAfter(wait)])
        case .userShareSpent(let wait):
            return ServiceProblem(.tooManyRequests, .rateLimited,
                                  "You asked for more items the catalog had to fetch than your share; slow down.",
                                  headers: [.retryAfter: retryAfter(wait)])
        case .circuitOpen(let wait):
            return ServiceProblem(.serviceUnavailable, .upstreamUnavailable,
                                  "The catalog is failing and is given a rest; retry later.",
                                  headers: [.retryAfter: retryAfter(wait)])
        case .timeout:
            return ServiceProblem(.gatewayTimeout, .upstreamTimeout, "The catalog did not answer in time.")
        case .malformedBody:
            return ServiceProblem(.badGateway, .upstreamBadResponse, "The catalog sent a response we cannot read.")
        case .failed, .rejected:
            return ServiceProblem(.badGateway, .upstreamBadResponse, "The catalog could not be reached or failed.")
        case .quotaLedgerUnavailable:  // the database's error is in the log line of the failure
            return ServiceProblem(.serviceUnavailable, .databaseUnavailable,
                                  "The database is unavailable; please retry shortly.", headers: [.retryAfter: "1"])
        }
    }
}
