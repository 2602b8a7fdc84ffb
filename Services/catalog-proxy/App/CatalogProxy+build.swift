import Configuration
import Contracts
import Foundation
import Hummingbird
import Postgres
import ServiceKit
import ServiceLifecycle

/// What sets catalog-proxy apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "catalog-proxy", apiPrefix: "/v1/catalog", port: 8082, schema: "catalog", databaseRole: "catalog_proxy",
    requiredPeers: [.auth]
)

/// The experiences served from a copy the proxy keeps (loaded by `catalog-proxy load`).
let datasetSources: [any DatasetSource] = [MobilesSource(), FlashCardsSource()]

/// What the executable runs.
public enum CatalogProxyDefinition: ServiceDefinition {
    public static var defaults: ServiceDefaults { serviceDefaults }

    public static func buildApplication(reader: ConfigReader, routeTable: RouteTable) async throws -> ServiceApplication {
        try await CatalogProxy.buildApplication(reader: reader, routeTable: routeTable)
    }

    public static func ownSettings(reader: ConfigReader) throws -> [Setting] {
        try CatalogConfiguration(reader: reader).declaredSettings
    }
}

/// The composition root: configuration, the kit, stores, upstream clients, the catalog, routes, then the application.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let catalogConfiguration = try CatalogConfiguration(reader: reader)
    let core = ServiceCore(configuration: configuration, routeTable: routeTable)
    let authentication = PeerAuthentication(core: core)
    let pool = core.pool
    let metrics = CatalogMetrics(factory: core.metrics)

    let callLedger = RollingCallLedger(pool: pool)
    var clients: [UpstreamName: UpstreamClient] = [:]
    for (name, settings) in catalogConfiguration.upstreams {
        let gate = UpstreamGate(upstream: name.rawValue, settings: settings, ledger: DailyQuotaLedger(pool: pool))
        clients[name] = UpstreamClient(name: name, settings: settings, gate: gate, callLedger: callLedger,
                                       httpClient: core.httpClient, metrics: metrics)
    }
    let claims = FetchClaims(pool: pool)
    let shared = SharedAnswers(pool: pool)
    let runner = StepRunner(clients: clients, shared: shared, claims: claims)
    let kept = KeptItems(pool: pool, staleIfError: catalogConfiguration.detailPolicy.staleIfError,
                         recordLife: catalogConfiguration.recordTTL)
    var backends: [CatalogBackend] = [
        .upstream(TicketmasterSource()), .upstream(RijksmuseumSource(recordLife: catalogConfiguration.recordTTL)),
        .upstream(BestsellersSource()),
    ]
    for source in datasetSources {
        // Refreshed from the upstream only where one is configured; otherwise the loaded copy is served.
        backends.append(.dataset(DatasetCatalog(
            source: source, store: DatasetStore(pool: pool), runner: runner, claims: claims,
            refreshEvery: clients[source.upstream] == nil ? nil : catalogConfiguration.datasetRefresh)))
    }
    let catalog = Catalog(
        backends: Dictionary(uniqueKeysWithValues: backends.map { ($0.experience, $0) }),
        runner: runner,
        resolver: ItemResolver(
            runner: runner,
            kept: kept, claims: claims, concurrencyPerRequest: ItemResolver.onePageAtOnce,
            pageDeadline: catalogConfiguration.pageDeadline),
        cache: ResponseCache(capacityBytes: catalogConfiguration.cacheBytes,
                             absentFor: catalogConfiguration.notFoundTTL),
        kept: kept,
        searchPolicy: catalogConfiguration.searchPolicy, detailPolicy: catalogConfiguration.detailPolicy
    )
    let users = UserRateLimiter(rate: catalogConfiguration.userRate, burst: catalogConfiguration.userRate * 4,
                                refusal: "Too many catalog requests; slow down.")

    let router = try core.router()
    ExperiencesController().register(on: router)
    let routes = router.group("v1/catalog").add(middleware: authentication.middleware)
        .group(context: AuthenticatedContext.self)
    CatalogController(catalog: catalog, users: users, metrics: metrics).register(on: routes)

    var background: [any Service] = [authentication.revocations]
    if let every = catalogConfiguration.bestsellersRefresh {
        background.append(BestsellersRefresh(
            runner: runner, shared: shared, lease: RefreshLease(pool: pool, name: "bestsellers", holder: UUID()),
            plan: BestsellersRefreshPlan(overviewEvery: every),
            callsPerMinute: BestsellersRefreshPlan.callsPerMinute(ofUpstreamLimit: catalogConfiguration.nytCallsPerMinute),
            logger: core.logger))
    }
    return core.application(router: router, migrations: CatalogMigrations.all, background: background)
}
