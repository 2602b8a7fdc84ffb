import Foundation

/// The body of `/health/ready`: the state of each dependency the service needs.
public struct ReadinessReport: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable { case ready, notReady = "not-ready" }

    public var status: Status
    /// Dependency name → `ok` or a short reason (`unreachable`, `timeout`).
    public var checks: [String: String]

    public init(status: Status, checks: [String: String]) {
        self.status = status
        self.checks = checks
    }
}
