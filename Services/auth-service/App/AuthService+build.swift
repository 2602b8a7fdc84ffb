import Configuration
import Postgres
import ServiceKit

/// What sets auth-service apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "auth-service", apiPrefix: "/v1/auth", port: 8081, schema: "auth", databaseRole: "auth_service", requiredPeers: []
)

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(reader: ConfigReader) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    return try buildServiceApplication(configuration: configuration, migrations: AuthMigrations.all) { _, _ in
        // Only the kit's operational routes so far: accounts and tokens are the next step.
    }
}
