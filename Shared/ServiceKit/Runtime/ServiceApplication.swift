import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import Postgres
import Prometheus
import Tracing

/// Every service's application type.
public typealias ServiceApplication = Application<RouterResponder<AppRequestContext>>

/// What a service's routes are built from: the shared plumbing, already configured.
public struct ServiceDependencies: Sendable {
    public let configuration: ServiceConfiguration
    public let pool: DatabasePool
    public let httpClient: HTTPClient
    public let metrics: PrometheusMetricsFactory
    public let logger: Logger
    /// Verifies auth-service's access tokens on its own (keys from the JWKS, revocations polled): add it to a route
    /// group and put the group under ``AuthenticatedContext``. Nil for a service that does not require auth-service
    /// as a peer (auth-service itself verifies against its own tables).
    public let authentication: AuthenticationMiddleware?
    /// The sessions auth-service has ended, as ``authentication`` checks them: for a response that outlives its
    /// request's check (a stream) to end with its session. Nil where ``authentication`` is.
    public let revocations: (any SessionRevocations)?
}

/// Builds a service: database pool and migrations, the kit's middleware (request id, metrics, problem+json),
/// `/health/*` and `/metrics`, then the service's own routes from `addRoutes`. The caller may add its own services
/// (they stop before the pool) and `beforeServerStarts` steps (they run after the migrations). `routeTable` receives
/// every route once they are all added (the API contract test reads it).
///
/// Start-up order: the pool and the HTTP client start first; migrations run before the port opens (retried while
/// PostgreSQL is still coming up); on SIGTERM the server drains in-flight requests, then the client and the pool close.
public func buildServiceApplication(
    configuration: ServiceConfiguration,
    migrations: [Migration],
    routeTable: RouteTable = RouteTable(),
    addRoutes: (Router<AppRequestContext>, ServiceDependencies) throws -> Void
) throws -> ServiceApplication {
    let logger = {
        var logger = Logger(label: configuration.defaults.name)
        logger.logLevel = configuration.logLevel
        return logger
    }()
    let registry = PrometheusCollectorRegistry()
    let metrics = PrometheusMetricsFactory(registry: registry)
    let pool = DatabasePool(
        connection: configuration.database, pool: configuration.pool,
        logger: logger, metricsFactory: metrics
    )
    var clientConfiguration = HTTPClient.Configuration()
    clientConfiguration.timeout = .init(connect: .seconds(2), read: .seconds(10))
    clientConfiguration.redirectConfiguration = .disallow  // a peer never redirects us anywhere
    // Connections kept per host: catalog-proxy's fan-outs (a page of records) would otherwise queue behind eight.
    clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
    let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
    var revocationFeed: RevocationFeed?
    var authentication: AuthenticationMiddleware?
    if let authURL = configuration.peers[.auth] {
        let feed = RevocationFeed(authURL: authURL, httpClient: httpClient, peerSecret: configuration.peerSecret,
                                  interval: configuration.revocationPollInterval, logger: logger)
        let keys = RemoteKeySet(authURL: authURL, httpClient: httpClient, logger: logger)
        authentication = AuthenticationMiddleware(verifier: AccessTokenVerifier(keys: keys, revocations: feed),
                                                  requireVerifiedEmail: configuration.requireVerifiedEmail)
        revocationFeed = feed
    }
    let dependencies = ServiceDependencies(
        configuration: configuration, pool: pool, httpClient: httpClient, metrics: metrics, logger: logger,
        authentication: authentication, revocations: revocationFeed
    )

    // HEAD wherever GET is served (RFC 9110 §9.1): the same answer without its body.
    let router = Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints)
    // Middleware first: a route only runs the middleware that existed when it was added.
    if !(InstrumentationSystem.tracer is NoOpTracer) {
        // A server span per request, continuing the caller's W3C trace context; left out unless traces are exported.
        router.add(middleware: TracingMiddleware())
    }
    router.addMiddleware {
        RequestIDMiddleware()
        MetricsMiddleware(factory: metrics)
        ProblemMiddleware(routes: routeTable, maxBodyBytes: configuration.maxBodyBytes)
    }
    try OperationsRoutes(
        pool: pool, peers: configuration.peers, httpClient: httpClient, registry: registry,
        readinessTimeout: configuration.readinessTimeout
    ).register(on: router, prefixes: ["", configuration.defaults.apiPrefix])
    try addRoutes(router, dependencies)
    routeTable.load(from: router)

    let idleTimeout = configuration.idleTimeout.components
    var app = Application(
        router: router,
        // Idle and half-sent connections are closed (a stream being answered is not idle).
        server: .http1(configuration: .init(idleTimeout: .seconds(idleTimeout.seconds))),
        configuration: ApplicationConfiguration(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: configuration.defaults.name
        ),
        logger: logger
    )
    app.addServices(pool, HTTPClientService(client: httpClient))
    if let revocationFeed { app.addServices(revocationFeed) }
    let migrator = Migrator(schema: configuration.schema, migrations: migrations)
    let dryRun = configuration.migration == .check
    app.beforeServerStarts {
        try await migrateWhenReachable(migrator, pool: pool, dryRun: dryRun, logger: logger)
    }
    return app
}

/// Applies migrations, waiting up to a minute for PostgreSQL to accept connections (replicas may start first).
public func migrateWhenReachable(_ migrator: Migrator, pool: DatabasePool, dryRun: Bool, logger: Logger) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while true {
        do {
            let applied = try await migrator.migrate(pool, dryRun: dryRun)
            logger.info("schema up to date", metadata: ["schema": "\(migrator.schema)", "applied": "\(applied)"])
            return
        } catch let error as PostgresError where error.isUnavailable && ContinuousClock.now < deadline {
            logger.warning("database not reachable yet; retrying migrations", metadata: ["error": "\(error)"])
            try await Task.sleep(for: .seconds(1))
        }
    }
}
