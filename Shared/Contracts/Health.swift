import Foundation

/// The body of a successful `/health/live` or `/health/ready`. A failing readiness check answers 503 with a
/// ``ProblemDetails`` of type ``ProblemType/notReady`` whose `detail` names the failing dependencies.
public struct ReadinessReport: Codable, Sendable, Hashable {
    /// `degraded`: this replica serves (its database answers), but a peer it calls does not: the requests that need
    /// that peer fail with a clear 503 until it is back, and the replica stays in the load balancer for the rest.
    public enum Status: String, Codable, Sendable { case ready, degraded, notReady = "not-ready" }

    public var status: Status
    /// Dependency name → `ok`, or what is wrong with it (readiness only; empty for liveness).
    public var checks: [String: String]

    public init(status: Status, checks: [String: String]) {
        self.status = status
        self.checks = checks
    }
}
