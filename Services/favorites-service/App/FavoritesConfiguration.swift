import Configuration
import ServiceKit

/// favorites-service's own settings (the kit's are in ``ServiceConfiguration``).
struct FavoritesConfiguration: Sendable {
    var erasurePoll: Duration
    var projectionPoll: Duration
    var maximumFavorites: Int
    var snapshotLifetime: Duration
    var maximumStreams: Int
    var streamsPerUser: Int
    var heartbeat: Duration
    var profilePoll: Duration
    /// Every setting read here, as declared (see ``StrictSettings/declared``).
    let declaredSettings: [Setting]

    init(reader: ConfigReader) throws {
        var settings = StrictSettings(reader: reader)
        erasurePoll = Duration.seconds(settings.int("erasure.pollSeconds", default: 10, in: 1...3600,
            help: "How often deleted accounts are fetched from auth-service and erased."))
        projectionPoll = Duration.milliseconds(settings.int("projection.pollMs", default: 1000, in: 10...60_000,
            help: "How often the popular projection looks for events no notification announced."))
        maximumFavorites = settings.int("favorites.maxPerExperience", default: 5000, in: 1...1_000_000,
            help: "Favorites one user may keep per experience; past it 409 `favorites-limit-reached`.")
        snapshotLifetime = Duration.seconds(settings.int("favorites.snapshotTtlSeconds", default: 30, in: 0...3600,
            help: """
            How long an item looked up in catalog-proxy gives the next favorites of it their snapshot on this replica, \
            without another lookup (0 turns it off). The catalog keeps details for minutes itself, so this adds no \
            staleness a user could see.
            """))
        maximumStreams = settings.int("favorites.streamsMax", default: 10_000, in: 1...1_000_000,
            help: """
            Change streams one replica holds; past it a new one is refused with 503 and `Retry-After: 2` (see [Change \
            streams](#change-streams)).
            """)
        streamsPerUser = settings.int("favorites.streamsPerUser", default: 5, in: 1...1000,
            help: """
            Change streams one user may hold on one replica; past it 429 `too-many-streams`, so one token cannot take \
            a replica's streams.
            """)
        heartbeat = Duration.seconds(settings.int("favorites.streamHeartbeatSeconds", default: 15, in: 1...300,
            help: """
            How often every open change stream gets a heartbeat comment, which keeps idle connections open through \
            proxies.
            """))
        profilePoll = Duration.milliseconds(settings.int("profile.pollMs", default: 1000, in: 100...60_000,
            help: """
            How often profile changes (experience, preferences, display name) are fetched from auth-service's \
            peer-only feed and sent to the user's open change streams: a change made on one device reaches the others \
            within about this.
            """))
        declaredSettings = settings.declared
        try settings.validate()
    }
}
