import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import Postgres
import Prometheus
import ServiceLifecycle
import Tracing

/// Every service's application type.
public typealias ServiceApplication = Application<RouterResponder<AppRequestContext>>

/// The plumbing every service starts from, built from its configuration: its logger, metrics, database pool and HTTP
/// client. A service's composition root is a straight line: this core, then its stores, peers, use cases and routes
/// (on ``router()``), then ``application(router:migrations:beforeServerStarts:background:)``.
public struct ServiceCore: Sendable {
    public let configuration: ServiceConfiguration
    public let logger: Logger
    public let metrics: PrometheusMetricsFactory
    public let pool: DatabasePool
    public let httpClient: HTTPClient
    /// Every route once they are all added: the problem middleware answers 405 from it, the contract test reads it.
    public let routeTable: RouteTable
    let registry: PrometheusCollectorRegistry

    public init(configuration: ServiceConfiguration, routeTable: RouteTable = RouteTable()) {
        self.configuration = configuration
        self.routeTable = routeTable
        var logger = Logger(label: configuration.defaults.name)
        logger.logLevel = configuration.logLevel
        self.logger = logger
        registry = PrometheusCollectorRegistry()
        metrics = PrometheusMetricsFactory(registry: registry)
        pool = DatabasePool(
            connection: configuration.database, pool: configuration.pool, logger: logger, metricsFactory: metrics
        )
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.timeout = .init(connect: .seconds(2), read: .seconds(10))
        clientConfiguration.redirectConfiguration = .disallow  // a peer never redirects us anywhere
        // Connections kept per host: catalog-proxy's fan-outs (a page of records) would otherwise queue behind eight.
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
        httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
    }

    /// A router that already has the kit's middleware (request id, metrics, problem+json; a server span per request
    /// when traces are exported) and `/health/*`, `/metrics` and `/openapi.json`. A route only runs the middleware that
    /// existed when it was added, so the service adds its own routes to this router.
    public func router() throws -> Router<AppRequestContext> {
        // HEAD wherever GET is served (RFC 9110 §9.1): the same answer without its body.
        let router = Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints)
        if !(InstrumentationSystem.tracer is NoOpTracer) {
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
        return router
    }

    /// The application serving `router`, once every route is on it. Start-up: the pool and the HTTP client start;
    /// `migrations` run before the port opens (retried while PostgreSQL is still coming up), then
    /// `beforeServerStarts` in order, then `background` starts beside the server (it reads tables the migrations
    /// made). On SIGTERM the server drains in-flight requests, `background` stops, then the client and the pool close.
    public func application(
        router: Router<AppRequestContext>,
        migrations: [Migration],
        beforeServerStarts: [@Sendable () async throws -> Void] = [],
        background: [any Service] = []
    ) -> ServiceApplication {
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
        let migrator = Migrator(schema: configuration.schema, migrations: migrations)
        let (pool, logger, dryRun) = (pool, logger, configuration.migration == .check)
        app.beforeServerStarts {
            try await migrateWhenReachable(migrator, pool: pool, dryRun: dryRun, logger: logger)
        }
        for step in beforeServerStarts { app.beforeServerStarts(perform: step) }
        app.addServicesAfterMigrations(background)
        return app
    }
}

/// auth-service's access tokens, verified by another service on its own: keys from the JWKS, ended sessions polled.
public struct PeerAuthentication: Sendable {
    /// Add it to a route group and put the group under ``AuthenticatedContext``.
    public let middleware: AuthenticationMiddleware
    /// The sessions auth-service has ended, as ``middleware`` checks them: for a response that outlives its request's
    /// check (a stream) to end with its session. A background service of the application (it polls).
    public let revocations: RevocationFeed

    public init(core: ServiceCore) {
        let authURL = core.configuration.peerURL(.auth)
        revocations = RevocationFeed(
            authURL: authURL, httpClient: core.httpClient, peerSecret: core.configuration.peerSecret,
            interval: core.configuration.revocationPollInterval, logger: core.logger
        )
        let keys = RemoteKeySet(authURL: authURL, httpClient: core.httpClient, logger: core.logger)
        middleware = AuthenticationMiddleware(
            verifier: AccessTokenVerifier(keys: keys, revocations: revocations),
            requireVerifiedEmail: core.configuration.requireVerifiedEmail
        )
    }
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
