import Configuration
import EventStore
import Hummingbird
import Postgres
import ServiceKit
import ServiceLifecycle

/// What sets favorites-service apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "favorites-service", apiPrefix: "/v1/favorites", port: 8083, schema: "favorites",
    databaseRole: "favorites_service", requiredPeers: [.auth, .catalog]
)

/// What the executable runs.
public enum FavoritesServiceDefinition: ServiceDefinition {
    public static var defaults: ServiceDefaults { serviceDefaults }

    public static func buildApplication(reader: ConfigReader, routeTable: RouteTable) async throws -> ServiceApplication {
        try await FavoritesService.buildApplication(reader: reader, routeTable: routeTable)
    }

    public static func ownSettings(reader: ConfigReader) throws -> [Setting] {
        try FavoritesConfiguration(reader: reader).declaredSettings
    }
}

/// The composition root: configuration, the kit, stores, peers, use cases, routes, then the application.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let settings = try FavoritesConfiguration(reader: reader)
    let core = ServiceCore(configuration: configuration, routeTable: routeTable)
    let authentication = PeerAuthentication(core: core)
    let pool = core.pool

    let store = FavoritesStore(pool: pool)
    let notifier = EventNotifier(pool: pool, channel: eventsChannel, logger: core.logger)
    let hub = ChangeHub(
        listener: PostgresListener(configuration: pool.connectionConfiguration, channels: [eventsChannel],
                                   logger: core.logger),
        revocations: authentication.revocations, capacity: settings.maximumStreams,
        perUser: settings.streamsPerUser, heartbeat: settings.heartbeat, logger: core.logger, metrics: core.metrics)
    let catalog = CatalogPeer(baseURL: configuration.peerURL(.catalog), httpClient: core.httpClient)
    // Half the sessions for writes at most, measured against all and a quarter (docs/benchmarks.md).
    let commits = GroupCommit(pool: pool, leaders: pool.configuration.size / 2)
    let writer = FavoritesWriter(store: store, commits: commits, notifier: notifier, metrics: core.metrics)

    let router = try core.router()
    let routes = router.group("v1/favorites").add(middleware: authentication.middleware)
        .group(context: AuthenticatedContext.self)
    FavoritesController(
        favoriteItem: FavoriteItem(writer: writer, catalog: catalog,
                                   recent: RecentItems(lifetime: settings.snapshotLifetime),
                                   maximumFavorites: settings.maximumFavorites),
        unfavoriteItem: UnfavoriteItem(writer: writer), clearFavorites: ClearFavorites(writer: writer),
        writeCard: WriteCard(writer: writer, maximumFavorites: settings.maximumFavorites),
        listFavorites: ListFavorites(store: store), listFavoriteIDs: ListFavoriteIDs(store: store),
        listChanges: ListChanges(store: store), pool: pool
    ).register(on: routes)
    ChangeStreamRoute(watchChanges: WatchChanges(store: store, hub: hub)).register(on: routes)

    let authURL = configuration.peerURL(.auth)
    return core.application(router: router, migrations: FavoritesMigrations.all, background: [
        authentication.revocations,
        hub,
        ProfileFeed(authURL: authURL, peerSecret: configuration.peerSecret, httpClient: core.httpClient,
                    hub: hub, interval: settings.profilePoll, logger: core.logger),
        AccountErasure(authURL: authURL, peerSecret: configuration.peerSecret, httpClient: core.httpClient,
                       pool: pool, interval: settings.erasurePoll, logger: core.logger),
        notifier,
        ProjectionRunner(projection: MostFavorited(), pool: pool, wakeUpChannel: eventsChannel,
                         pollInterval: settings.projectionPoll, logger: core.logger,
                         metricsFactory: core.metrics),
    ])
}

/// The NOTIFY channel on which appends wake the async projections and the change streams (see ``EventNotifier``).
let eventsChannel = "favorites_events"
