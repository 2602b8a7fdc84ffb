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

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let catalogConfiguration = try CatalogConfiguration(reader: reader)
    var background: [any Service] = []
    var app = try buildServiceApplication(
        configuration: configuration, migrations: CatalogMigrations.all, routeTable: routeTable
    ) { router, dependencies in
        ExperiencesController().register(on: router)
        guard let authentication = dependencies.authentication else { return }
        let pool = dependencies.pool
        let metrics = CatalogMetrics(factory: dependencies.metrics)
        var clients: [UpstreamName: UpstreamClient] = [:]
        let callLedger = RollingCallLedger(pool: pool)
        for (name, settings) in catalogConfiguration.upstreams {
            let gate = UpstreamGate(upstream: name.rawValue, settings: settings, ledger: DailyQuotaLedger(pool: pool))
            clients[name] = UpstreamClient(name: name, settings: settings, gate: gate, callLedger: callLedger,
                                           httpClient: dependencies.httpClient, metrics: metrics)
        }
        let claims = FetchClaims(pool: pool)
        let coalescer = Coalescer(claims: claims)
        let shared = SharedAnswers(pool: pool)
        let runner = StepRunner(clients: clients, shared: shared, coalescer: coalescer)
        if let every = catalogConfiguration.bestsellersRefresh {
            background.append(BestsellersRefresh(
                runner: runner, shared: shared, lease: RefreshLease(pool: pool, name: "bestsellers", holder: UUID()),
                plan: BestsellersRefreshPlan(overviewEvery: every),
                callsPerMinute: BestsellersRefreshPlan.callsPerMinute(
                    ofUpstreamLimit: catalogConfiguration.nytCallsPerMinute),
                logger: dependencies.logger))
        }
        let staleIfError = catalogConfiguration.detailPolicy.staleIfError
        let backends: [CatalogBackend] = [
            .upstream(TicketmasterSource()), .upstream(RijksmuseumSource(recordLife: catalogConfiguration.recordTTL)),
            .upstream(BestsellersSource()),
        ] + datasetSources.map { CatalogBackend.dataset($0) }
        let datasets = DatasetStore(pool: pool)
        // Refreshed from the upstream only where one is configured; otherwise the loaded copy is served.
        let refreshDataset = RefreshDataset(
            store: datasets, runner: runner, claims: claims,
            refreshEvery: Dictionary(uniqueKeysWithValues: datasetSources.filter { clients[$0.upstream] != nil }
                .map { ($0.experience, catalogConfiguration.datasetRefresh) }))
        let kept = KeptItems(pool: pool, staleIfError: staleIfError, recordLife: catalogConfiguration.recordTTL)
        let resolver = ItemResolver(runner: runner, kept: kept, coalescer: coalescer,
                                    concurrencyPerRequest: ItemResolver.onePageAtOnce,
                                    pageDeadline: catalogConfiguration.pageDeadline)
        let cache = ResponseCache(capacityBytes: catalogConfiguration.cacheBytes,
                                  absentFor: catalogConfiguration.notFoundTTL, tag: { ETag.of($0) },
                                  coalescer: coalescer)
        let itemDetail = ItemDetail(cache: cache, runner: runner, resolver: resolver, kept: kept, datasets: datasets,
                                    refreshDataset: refreshDataset, policy: catalogConfiguration.detailPolicy)
        let routes = router.group("v1/catalog").add(middleware: authentication)
            .group(context: AuthenticatedContext.self)
        let users = UserRateLimiter(rate: catalogConfiguration.userRate, burst: catalogConfiguration.userRate * 4,
                                    refusal: "Too many catalog requests; slow down.")
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
    }
    app.addServicesAfterMigrations(background)
    return app
}
