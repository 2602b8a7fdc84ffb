import Configuration
import Foundation
import Logging
import Postgres

/// What differs between the three services before any configuration is read.
public struct ServiceDefaults: Sendable {
    /// Deployable name (`auth-service`): logger label, server name and the database `application_name`.
    public var name: String
    /// Public path prefix (`/v1/auth`): health checks are also served under it, so a peer reached through the
    /// gateway and one reached directly answer on the same paths.
    public var apiPrefix: String
    public var port: Int
    /// The PostgreSQL schema the service owns.
    public var schema: String
    /// The database role the service connects as by default.
    public var databaseRole: String
    /// Peers that must answer before the service reports ready.
    public var requiredPeers: [PeerKind]
    /// The default of `HTTP_MAX_BODY_BYTES`: no more than the service's largest legitimate body needs, so a hostile
    /// one is refused by its `Content-Length` before it is read and parsed.
    public var maxBodyBytes: Int

    public init(name: String, apiPrefix: String, port: Int, schema: String, databaseRole: String,
                requiredPeers: [PeerKind], maxBodyBytes: Int = 1 << 20) {
        self.name = name
        self.apiPrefix = apiPrefix
        self.port = port
        self.schema = schema
        self.databaseRole = databaseRole
        self.requiredPeers = requiredPeers
        self.maxBodyBytes = maxBodyBytes
    }
}

/// The other services one service calls.
public enum PeerKind: String, Sendable, CaseIterable {
    case auth, catalog

    /// A cheap path that answers 200 when the peer is up, the same directly and through the gateway.
    var probePath: String {
        switch self {
        case .auth: "/v1/auth/health/live"
        case .catalog: "/v1/catalog/health/live"
        }
    }
}

/// Everything a service reads from its environment, with safe defaults. Every key is listed in the README.
///
/// Keys (environment variable ← configuration key):
/// - `HTTP_HOST` (`http.host`, default `127.0.0.1`), `HTTP_PORT` (`http.port`, per service)
/// - `HTTP_MAX_BODY_BYTES` (`http.maxBodyBytes`, default per service: 64 KiB for auth-service, 1 MiB otherwise)
/// - `DATABASE_URL` (`database.url`, secret; libpq URI or key/value string)
/// - `DATABASE_SCHEMA` (`database.schema`, per service), `DATABASE_POOL_SIZE` (`database.poolSize`, default 8)
/// - `DATABASE_LEASE_TIMEOUT_MS` (default 5000), `DATABASE_QUERY_TIMEOUT_MS` (default 15000),
///   `DATABASE_STATEMENT_TIMEOUT_MS` (default 10000)
/// - `DATABASE_MIGRATE` (`auto` applies pending migrations at start, `check` refuses to start if any are pending)
/// - `AUTH_URL`, `CATALOG_URL` (peers, default `http://127.0.0.1:8081` / `:8082`)
/// - `REVOCATION_POLL_MS` (default 2000): how often services that verify tokens fetch auth-service's revocations
/// - `PEER_SECRET` (secret, default ``PeerSecret/localDefault``): what services present to each other's peer-only feeds
/// - `HTTP_IDLE_TIMEOUT_SECONDS` (default 75): a connection with no request in progress and nothing read for this long
///   is closed (an idle keep-alive, or a request sent by halves and left hanging)
/// - `READINESS_TIMEOUT_MS` (default 2000), `SHUTDOWN_TIMEOUT_SECONDS` (default 25)
/// - `LOG_LEVEL` (default `info`), `LOG_FORMAT` (`json` or `text`, default `json`)
public struct ServiceConfiguration: Sendable {
    public enum MigrationMode: String, Sendable, CaseIterable { case auto, check }
    public enum LogFormat: String, Sendable, CaseIterable { case json, text }

    public var defaults: ServiceDefaults
    public var host: String
    public var port: Int
    public var maxBodyBytes: Int
    public var idleTimeout: Duration
    public var peerSecret: PeerSecret
    public var database: ConnectionConfiguration
    public var pool: PoolConfiguration
    public var migration: MigrationMode
    public var peers: [PeerKind: String]
    public var readinessTimeout: Duration
    public var revocationPollInterval: Duration
    public var shutdownTimeout: Duration
    /// Whether access tokens of accounts whose email is not verified are refused (403 `email-unverified`) by the
    /// services that verify tokens of another (auth-service's own routes never refuse them: they are how a user
    /// verifies).
    public var requireVerifiedEmail: Bool
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    /// Every setting read above, as declared (see ``StrictSettings/declared``).
    public let declaredSettings: [Setting]

    /// Reads every setting; throws ``ConfigurationError`` listing each value that cannot be used.
    public init(reader: ConfigReader, defaults: ServiceDefaults) throws {
        var settings = StrictSettings(reader: reader)
        self.defaults = defaults
        host = settings.string("http.host", default: "127.0.0.1",
            help: "Address to bind; `0.0.0.0` for other hosts.")
        port = settings.int("http.port", default: defaults.port, in: 0...65_535,
            help: "Port to listen on.")
        maxBodyBytes = settings.int("http.maxBodyBytes", default: defaults.maxBodyBytes, in: 1...(64 << 20),
            help: """
            Largest request body; larger is 413 `payload-too-large`, refused by its `Content-Length` before it is \
            read. auth-service's largest legitimate body (a profile change with 32 preferences) fits in 64 KiB \
            many times over.
            """)
        // Longer than the keep-alive of every client of ours (nginx's upstream connections 60 s, AsyncHTTPClient's
        // pool 60 s), so that the client always gives up an idle connection first and never sends on a closing one.
        idleTimeout = .seconds(settings.int("http.idleTimeoutSeconds", default: 75, in: 1...3600,
            help: """
            A connection with no request in progress and nothing read for this long is closed: an idle keep-alive, \
            or a request sent by halves and left hanging. Longer than nginx's upstream keep-alive (50 s) and \
            AsyncHTTPClient's (60 s), so a client always lets go of an idle connection first.
            """))
        peerSecret = PeerSecret(settings.string("peer.secret", default: PeerSecret.localDefault, isSecret: true,
            help: """
            What the services present (`X-Peer-Secret`) to auth-service's peer-only feeds, which refuse anyone \
            else with 401. The same on every service; the default serves the local stack and the tests only: set a \
            long random one anywhere else (compose passes `PEER_SECRET` through; Kubernetes reads the Secret \
            `favoriteme-peer`).
            """))
        let schema = settings.string("database.schema", default: defaults.schema,
            help: "The service's schema (its `search_path`).")
        database = ConnectionConfiguration(
            connectionString: settings.string(
                "database.url", default: "postgresql://\(defaults.databaseRole)@127.0.0.1:5432/favoriteme",
                isSecret: true
            ,
                help: """
                libpq connection string (URI or key/value); by default \
                `postgresql://<role>@127.0.0.1:5432/favoriteme`. What it leaves out comes from `PG*` variables and \
                `~/.pgpass`. Roles: `auth_service`, `catalog_proxy`, `favorites_service`.
                """),
            applicationName: defaults.name,
            searchPath: schema,
            statementTimeout: .milliseconds(settings.int("database.statementTimeoutMs", default: 10_000, in: 1...3_600_000,
                help: "PostgreSQL `statement_timeout` of every session."))
        )
        pool = PoolConfiguration(
            size: settings.int("database.poolSize", default: 8, in: 1...256,
                help: "Most database sessions per process; favorites-service commits writes on at most half of them at once."),
            leaseTimeout: .milliseconds(settings.int("database.leaseTimeoutMs", default: 5000, in: 1...600_000,
                help: "How long a request waits for a free session before 503 `database-unavailable`.")),
            queryTimeout: .milliseconds(settings.int("database.queryTimeoutMs", default: 15_000, in: 1...3_600_000,
                help: "Bound on one lease (all statements of one unit of work); past it the statement is cancelled."))
        )
        migration = settings.choice("database.migrate", default: MigrationMode.auto,
            help: "`auto` applies pending migrations at start; `check` refuses to start while any are pending.")
        var peers: [PeerKind: String] = [:]
        for peer in defaults.requiredPeers {
            peers[peer] = switch peer {
            // Checked like the upstreams' URLs: a scheme-less `auth-service:8081` would start, then fail every request.
            // Without a trailing slash, so that every path appended to it starts with exactly one.
            case .auth: settings.baseURL("auth.url", default: "http://127.0.0.1:8081",
                help: """
                auth-service's base URL (http(s), no query or credentials), for catalog-proxy and \
                favorites-service.
                """).trimmingSuffix("/")
            case .catalog: settings.baseURL("catalog.url", default: "http://127.0.0.1:8082",
                help: """
                catalog-proxy's base URL: for favorites-service (each favorite's item), and for auth-service \
                (checking a `defaultCategory` preference; sign-in never waits on it).
                """).trimmingSuffix("/")
            }
        }
        self.peers = peers
        readinessTimeout = .milliseconds(settings.int("readiness.timeoutMs", default: 2000, in: 1...60_000,
            help: "Bound on each readiness check."))
        revocationPollInterval = .milliseconds(settings.int("revocation.pollMs", default: 1000, in: 100...60_000,
            help: """
            How often catalog-proxy and favorites-service fetch the list of ended sessions (a conditional request: \
            304 while nothing changed). A signed-out session's change streams end within this plus half a second.
            """))
        shutdownTimeout = .seconds(settings.int("shutdown.timeoutSeconds", default: 25, in: 1...3600,
            help: "Longest graceful shutdown."))
        requireVerifiedEmail = settings.bool("requireVerifiedEmail", default: false,
            help: """
            `true`: access tokens of accounts whose email is not verified are refused with 403 `email-unverified`. \
            auth-service's own routes still accept them, so the user can ask for a new mail and verify.
            """)
        logLevel = settings.choice("log.level", default: Logger.Level.info,
            help: "How much is logged.")
        logFormat = settings.choice("log.format", default: LogFormat.json,
            help: "One JSON object per line, or text for a terminal.")
        settings.readElsewhere("OTEL_EXPORTER_OTLP_ENDPOINT", help: """
            Where traces go over OTLP/HTTP (protobuf), e.g. `http://otel-collector:4318` (`/v1/traces` is appended; \
            `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as given). Unset: no tracer, no exporter, nothing paid. The \
            specification's other variables apply (`OTEL_SERVICE_NAME`, default the service's name; \
            `OTEL_TRACES_SAMPLER`, `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_EXPORTER_OTLP_HEADERS`, …).
            """)
        declaredSettings = settings.declared
        try settings.validate()
    }

    /// Environment variables whose values are secrets: marked so by the configuration reader (never printed).
    public static let secretEnvironmentVariables: Set<String> = [
        "DATABASE_URL", "PEER_SECRET", "TICKETMASTER_API_KEY", "NYT_BOOKS_API_KEY", "GOOGLE_BOOKS_API_KEY",
    ]

    /// The base URL of a peer the service requires (its defaults name it, so the configuration always has one).
    public func peerURL(_ peer: PeerKind) -> String {
        guard let url = peers[peer] else { preconditionFailure("\(peer) is not a required peer of \(defaults.name)") }
        return url
    }

    /// The schema the service's tables live in.
    public var schema: String { database.searchPath ?? defaults.schema }
}
