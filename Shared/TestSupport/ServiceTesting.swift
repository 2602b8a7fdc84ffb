import Configuration
import Foundation
import ServiceKit

/// A service configuration for tests, read through the same environment-variable mapping production uses:
/// `DATABASE_URL` from the test database, port 0 (the test framework picks), quiet logs, plus `environment`.
public func testServiceConfiguration(
    defaults: ServiceDefaults,
    databaseURL: String,
    environment: [String: String] = [:]
) throws -> ServiceConfiguration {
    let base = ["DATABASE_URL": databaseURL, "HTTP_PORT": "0", "LOG_LEVEL": "warning", "DATABASE_POOL_SIZE": "4"]
    let reader = ConfigReader(providers: [
        EnvironmentVariablesProvider(
            environmentVariables: base.merging(environment) { _, override in override },
            secretsSpecifier: .specific(["DATABASE_URL"])
        ),
    ])
    return try ServiceConfiguration(reader: reader, defaults: defaults)
}
