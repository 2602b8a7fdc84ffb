import Configuration
import Postgres
import ServiceKit

/// What sets catalog-proxy apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "catalog-proxy", apiPrefix: "/v1/catalog", port: 8082, schema: "catalog", databaseRole: "catalog_proxy",
    requiredPeers: [.auth]
)

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(reader: ConfigReader) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    return try buildServiceApplication(configuration: configuration, migrations: CatalogMigrations.all) { router, _ in
        ExperiencesController().register(on: router)
    }
}
