import Configuration
import Postgres
import ServiceKit

/// What sets favorites-service apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "favorites-service", apiPrefix: "/v1/favorites", port: 8083, schema: "favorites", databaseRole: "favorites_service", requiredPeers: [.auth, .catalog]
)

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(reader: ConfigReader) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    return try buildServiceApplication(configuration: configuration, migrations: FavoritesMigrations.all) { _, _ in
        // Only the kit's operational routes so far: the event store and the favorites API are the next step.
    }
}
