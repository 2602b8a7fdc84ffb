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
///
/// Own setting: `ERASURE_POLL_SECONDS` (default 10), how often account deletions are fetched from auth-service.
public func buildApplication(reader: ConfigReader) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    var settings = StrictSettings(reader: reader)
    let erasurePoll = Duration.seconds(settings.int("erasure.pollSeconds", default: 10, in: 1...3600))
    try settings.validate()
    var erasure: AccountErasure?
    var app = try buildServiceApplication(configuration: configuration, migrations: FavoritesMigrations.all) {
        router, dependencies in
        guard let authentication = dependencies.authentication, let catalogURL = configuration.peers[.catalog],
              let authURL = configuration.peers[.auth]
        else { return }
        erasure = AccountErasure(authURL: authURL, httpClient: dependencies.httpClient, pool: dependencies.pool,
                                 interval: erasurePoll, logger: dependencies.logger)
        let routes = router.group("v1/favorites").add(middleware: authentication)
            .group(context: AuthenticatedContext.self)
        FavoritesController(
            store: FavoritesStore(pool: dependencies.pool),
            catalog: CatalogLookup(baseURL: catalogURL, httpClient: dependencies.httpClient)
        ).register(on: routes)
    }
    if let erasure { app.addServices(erasure) }
    return app
}
