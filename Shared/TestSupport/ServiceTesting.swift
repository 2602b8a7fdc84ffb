import Configuration
import Foundation
import ServiceKit

/// The configuration reader of a service under test, mapped from environment variables the way production reads
/// them: `DATABASE_URL` from the test database, port 0 (the test framework picks), quiet logs, database timeouts long
/// enough for a machine busy with parallel tests (tests of the timeouts set their own), plus `environment`.
public func testConfigReader(databaseURL: String, environment: [String: String] = [:]) -> ConfigReader {
    let base = [
        "DATABASE_URL": databaseURL, "HTTP_PORT": "0", "LOG_LEVEL": "warning", "DATABASE_POOL_SIZE": "4",
        "DATABASE_LEASE_TIMEOUT_MS": "30000", "DATABASE_QUERY_TIMEOUT_MS": "60000",
        "DATABASE_STATEMENT_TIMEOUT_MS": "60000",
    ]
    return ConfigReader(providers: [
        EnvironmentVariablesProvider(
            environmentVariables: base.merging(environment) { _, override in override },
            secretsSpecifier: .specific(ServiceConfiguration.secretEnvironmentVariables)
        ),
    ])
}

/// A service configuration for tests (see ``testConfigReader(databaseURL:environment:)``).
public func testServiceConfiguration(
    defaults: ServiceDefaults,
    databaseURL: String,
    environment: [String: String] = [:]
) throws -> ServiceConfiguration {
    try ServiceConfiguration(reader: testConfigReader(databaseURL: databaseURL, environment: environment),
                             defaults: defaults)
}
