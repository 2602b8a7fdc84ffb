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

/// The composition root: reads configuration and builds the application with its routes.
///
/// Own settings: `ERASURE_POLL_SECONDS` (default 10), how often account deletions are fetched from auth-service;
/// `PROJECTION_POLL_MS` (default 1000), how often the async projections look for new events when no notification
/// woke them; `FAVORITES_MAX_PER_EXPERIENCE` (default 5000), how many favorites one user may keep in one experience;
/// `FAVORITES_SNAPSHOT_TTL_SECONDS` (default 30; 0 turns it off), how long an item looked up in the catalog serves
/// the next favorites of it on this replica; `FAVORITES_STREAMS_MAX` (default 10000), how many change streams one
/// replica holds; `FAVORITES_STREAMS_PER_USER` (default 5), how many of them one user may hold on one replica;
/// `FAVORITES_STREAM_HEARTBEAT_SECONDS` (default 15), how often an idle stream sends a heartbeat;
/// `PROFILE_POLL_MS` (default 1000), how often profile changes are fetched from auth-service for the streams.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    var settings = StrictSettings(reader: reader)
    let erasurePoll = Duration.seconds(settings.int("erasure.pollSeconds", default: 10, in: 1...3600))
    let projectionPoll = Duration.milliseconds(settings.int("projection.pollMs", default: 1000, in: 10...60_000))
    let maximumFavorites = settings.int("favorites.maxPerExperience", default: 5000, in: 1...1_000_000)
    let snapshotLifetime = Duration.seconds(settings.int("favorites.snapshotTtlSeconds", default: 30, in: 0...3600))
    let maximumStreams = settings.int("favorites.streamsMax", default: 10_000, in: 1...1_000_000)
    let streamsPerUser = settings.int("favorites.streamsPerUser", default: 5, in: 1...1000)
    let heartbeat = Duration.seconds(settings.int("favorites.streamHeartbeatSeconds", default: 15, in: 1...300))
    let profilePoll = Duration.milliseconds(settings.int("profile.pollMs", default: 1000, in: 100...60_000))
    try settings.validate()
    var background: [any Service] = []
    var app = try buildServiceApplication(
        configuration: configuration, migrations: FavoritesMigrations.all, routeTable: routeTable
    ) { router, dependencies in
        guard let authentication = dependencies.authentication, let catalogURL = configuration.peers[.catalog],
              let authURL = configuration.peers[.auth]
        else { return }
        let notifier = EventNotifier(pool: dependencies.pool, channel: eventsChannel)
        let hub = ChangeHub(
            listener: PostgresListener(configuration: dependencies.pool.connectionConfiguration,
                                       channels: [eventsChannel], logger: dependencies.logger),
            revocations: dependencies.revocations, capacity: maximumStreams, perUser: streamsPerUser, heartbeat: heartbeat,
            logger: dependencies.logger, metrics: dependencies.metrics)
        background = [
            hub,
            ProfileFeed(authURL: authURL, peerSecret: configuration.peerSecret, httpClient: dependencies.httpClient,
                        hub: hub, interval: profilePoll, logger: dependencies.logger),
            AccountErasure(authURL: authURL, peerSecret: configuration.peerSecret, httpClient: dependencies.httpClient,
                           pool: dependencies.pool,
                           interval: erasurePoll, logger: dependencies.logger),
            notifier,
            ProjectionRunner(projection: MostFavorited(), pool: dependencies.pool, wakeUpChannel: eventsChannel,
                             pollInterval: projectionPoll, logger: dependencies.logger,
                             metricsFactory: dependencies.metrics),
        ]
        let routes = router.group("v1/favorites").add(middleware: authentication)
            .group(context: AuthenticatedContext.self)
        let store = FavoritesStore(pool: dependencies.pool)
        let writer = FavoritesWriter(store: store, notifier: notifier, metrics: dependencies.metrics)
        let catalog = CatalogPeer(baseURL: catalogURL, httpClient: dependencies.httpClient)
        FavoritesController(
            favoriteItem: FavoriteItem(writer: writer, catalog: catalog, recent: RecentItems(lifetime: snapshotLifetime),
                                       maximumFavorites: maximumFavorites),
            unfavoriteItem: UnfavoriteItem(writer: writer), clearFavorites: ClearFavorites(writer: writer),
            writeCard: WriteCard(writer: writer, maximumFavorites: maximumFavorites),
            listFavorites: ListFavorites(store: store), listFavoriteIDs: ListFavoriteIDs(store: store),
            listChanges: ListChanges(store: store), pool: dependencies.pool
        ).register(on: routes)
        ChangeStreamRoute(watchChanges: WatchChanges(store: store, hub: hub)).register(on: routes)
    }
    app.addServicesAfterMigrations(background)
    return app
}

/// The NOTIFY channel on which appends wake the async projections and the change streams (see ``EventNotifier``).
let eventsChannel = "favorites_events"
