import Configuration
import Contracts
import Hummingbird
import Postgres
import ServiceKit

/// What sets catalog-proxy apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "catalog-proxy", apiPrefix: "/v1/catalog", port: 8082, schema: "catalog", databaseRole: "catalog_proxy",
    requiredPeers: [.auth]
)

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let catalogConfiguration = try CatalogConfiguration(reader: reader)
    return try buildServiceApplication(
        configuration: configuration, migrations: CatalogMigrations.all, routeTable: routeTable
    ) { router, dependencies in
        ExperiencesController().register(on: router)
        guard let authentication = dependencies.authentication else { return }
        var backends: [ExperienceID: Catalog.Backend] = [:]
        for source in CatalogSources.all {
            // Every registered source has settings: CatalogConfiguration reads them per experience.
            guard let settings = catalogConfiguration.upstreams[source.experience] else { continue }
            let client = UpstreamClient(
                name: source.experience.rawValue, settings: settings, keyParameter: source.keyParameter,
                gate: UpstreamGate(upstream: source.experience.rawValue, settings: settings,
                                   ledger: DailyQuotaLedger(pool: dependencies.pool)),
                httpClient: dependencies.httpClient, logger: dependencies.logger
            )
            backends[source.experience] = Catalog.Backend(source: source, client: client)
        }
        let catalog = Catalog(
            backends: backends, cache: ResponseCache(capacityBytes: catalogConfiguration.cacheBytes),
            seen: SeenItems(pool: dependencies.pool, window: catalogConfiguration.detailPolicy.staleIfError),
            searchPolicy: catalogConfiguration.searchPolicy, detailPolicy: catalogConfiguration.detailPolicy
        )
        let routes = router.group("v1/catalog").add(middleware: authentication)
            .group(context: AuthenticatedContext.self)
        CatalogController(catalog: catalog, users: UserRateLimiter(rate: catalogConfiguration.userRate,
                                                                  burst: catalogConfiguration.userRate * 4))
            .register(on: routes)
    }
}
