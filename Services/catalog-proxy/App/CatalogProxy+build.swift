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

/// The composition root: configuration, the kit, stores, upstream clients, use cases, routes, then the application.
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
    let coalescer = Coalescer(claims: claims)
    let shared = SharedAnswers(pool: pool)
    let runner = StepRunner(clients: clients, shared: shared, coalescer: coalescer)
    let datasets = DatasetStore(pool: pool)
    let kept = KeptItems(pool: pool, staleIfError: catalogConfiguration.detailPolicy.staleIfError,
                         recordLife: catalogConfiguration.recordTTL)
    let resolver = ItemResolver(runner: runner, kept: kept, coalescer: coalescer,
                                concurrencyPerRequest: ItemResolver.onePageAtOnce,
                                pageDeadline: catalogConfiguration.pageDeadline)
    let cache = ResponseCache(capacityBytes: catalogConfiguration.cacheBytes,
                              absentFor: catalogConfiguration.notFoundTTL, tag: { ETag.of($0) },
                              coalescer: coalescer)
    let backends: [CatalogBackend] = [
        .upstream(TicketmasterSource()), .upstream(RijksmuseumSource(recordLife: catalogConfiguration.recordTTL)),
        .upstream(BestsellersSource()),
    ] + datasetSources.map { CatalogBackend.dataset($0) }
    // Refreshed from the upstream only where one is configured; otherwise the loaded copy is served.
    let refreshDataset = RefreshDataset(
        store: datasets, runner: runner, claims: claims,
        refreshEvery: Dictionary(uniqueKeysWithValues: datasetSources.filter { clients[$0.upstream] != nil }
            .map { ($0.experience, catalogConfiguration.datasetRefresh) }))
    let itemDetail = ItemDetail(cache: cache, runner: runner, resolver: resolver, kept: kept, datasets: datasets,
                                refreshDataset: refreshDataset, policy: catalogConfiguration.detailPolicy)
    let users = UserRateLimiter(rate: catalogConfiguration.userRate, burst: catalogConfiguration.userRate * 4,
                                refusal: "Too many catalog requests; slow down.")

    let router = try core.router()
    ExperiencesController().register(on: router)
    let routes = router.group("v1/catalog").add(middleware: authentication.middleware)
        .group(context: AuthenticatedContext.self)
    CatalogController(
        backends: Dictionary(uniqueKeysWithValues: backends.map { ($0.experience, $0) }),
        searchItems: SearchItems(cache: cache, runner: runner, resolver: resolver, kept: kept, datasets: datasets,
                                 refreshDataset: refreshDataset, policy: catalogConfiguration.searchPolicy),
        itemDetail: itemDetail,
        itemCell: ItemCell(detail: itemDetail, cache: cache, runner: runner, kept: kept,
                           policy: catalogConfiguration.detailPolicy),
        listCategories: ListCategories(cache: cache, runner: runner),
        users: users, metrics: metrics
    ).register(on: routes)

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
