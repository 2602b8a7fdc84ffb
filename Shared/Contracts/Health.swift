import Foundation

/// The body of a successful `/health/live` or `/health/ready`. A failing readiness check answers 503 with a
/// ``ProblemDetails`` of type ``ProblemType/notReady`` whose `detail` names the failing dependencies.
public struct ReadinessReport: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable { case ready, notReady = "not-ready" }

    public var status: Status
    /// Dependency name → `ok` (readiness only; empty for liveness).
    public var checks: [String: String]

    public init(status: Status, checks: [String: String]) {
        self.status = status
        self.checks = checks
    }
}
