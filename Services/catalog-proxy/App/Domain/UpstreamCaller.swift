import Foundation
import Logging

/// Who a load's upstream calls are made for, passed down with every call to the gate that counts them: the user whose
/// share of each upstream's budgets they spend (``UserShare``), or none for the service's own calls (refreshes of the
/// best sellers and of datasets); with the request id the calls carry and the logger they log to.
///
/// A call joined by other requests (``Coalescer``) is made for the caller that started it.
struct UpstreamCaller: Sendable {
    var user: UUID?
    var requestID: String
    var logger: Logger

    /// The service's own calls: counted in the upstreams' budgets, in no user's share.
    static func service(requestID: String, logger: Logger) -> UpstreamCaller {
        UpstreamCaller(user: nil, requestID: requestID, logger: logger)
    }
}
