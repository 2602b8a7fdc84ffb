import Configuration
import Hummingbird
import Postgres
import ServiceKit

/// What sets favorites-service apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "favorites-service", apiPrefix: "/v1/favorites", port: 8083, schema: "favorites",
    databaseRole: "favorites_service", requiredPeers: [.auth, .catalog]
)

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(reader: ConfigReader) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    return try buildServiceApplication(configuration: configuration, migrations: FavoritesMigrations.all) {
        router, dependencies in
        guard let authentication = dependencies.authentication, let catalogURL = configuration.peers[.catalog] else {
            return
        }
        let routes = router.group("v1/favorites").add(middleware: authentication)
            .group(context: AuthenticatedContext.self)
        FavoritesController(
            store: FavoritesStore(pool: dependencies.pool),
            catalog: CatalogLookup(baseURL: catalogURL, httpClient: dependencies.httpClient)
        ).register(on: routes)
    }
}
