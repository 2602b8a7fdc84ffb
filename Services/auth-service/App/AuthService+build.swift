import Configuration
import Hummingbird
import Postgres
import ServiceKit

/// What sets auth-service apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "auth-service", apiPrefix: "/v1/auth", port: 8081, schema: "auth", databaseRole: "auth_service", requiredPeers: []
)

/// The composition root: reads configuration and builds the application with its routes.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let authConfiguration = try AuthConfiguration(reader: reader)
    let hasher = try await PasswordHasher.make(cost: authConfiguration.bcryptCost)
    var keys: SigningKeys?
    var maintenance: AuthMaintenance?
    var app = try buildServiceApplication(
        configuration: configuration, migrations: AuthMigrations.all, routeTable: routeTable
    ) { router, dependencies in
        let signingKeys = SigningKeys(pool: dependencies.pool, schedule: authConfiguration.keySchedule,
                                      logger: dependencies.logger)
        let sessions = SessionStore(pool: dependencies.pool)
        let throttle = ThrottleStore(pool: dependencies.pool)
        let core = AuthCore(
            configuration: authConfiguration, pool: dependencies.pool, accounts: AccountStore(pool: dependencies.pool),
            sessions: sessions, throttle: throttle, hasher: hasher,
            issuer: TokenIssuer(keys: signingKeys, accessTokenLifetime: authConfiguration.accessTokenLifetime,
                                sessions: authConfiguration.sessions),
            verifier: AccessTokenVerifier(keys: signingKeys, revocations: LiveSessionCheck(sessions: sessions)),
            metrics: dependencies.metrics
        )
        let api = router.group("v1/auth")
        let authenticated = router.group("v1/auth")
            .add(middleware: AuthenticationMiddleware(verifier: core.verifier))
            .group(context: AuthenticatedContext.self)
        AccountController(core: core, categories: CatalogCategories(peer: PeerRequest(
            baseURL: authConfiguration.catalogURL, httpClient: dependencies.httpClient)))
            .register(public: api, authenticated: authenticated)
        SessionController(core: core).register(public: api, authenticated: authenticated)
        KeysController(core: core, keys: signingKeys).register(on: router, api: api)
        keys = signingKeys
        maintenance = AuthMaintenance(keys: signingKeys, sessions: sessions, accounts: core.accounts, throttle: throttle,
                                      configuration: authConfiguration, logger: dependencies.logger)
    }
    if let keys, let maintenance {
        // After the migrations (added first by the kit): a fresh database gets its first key before any request.
        app.beforeServerStarts { try await keys.refresh() }
        app.addServices(maintenance)
    }
    return app
}
