import Configuration
import Hummingbird
import Postgres
import ServiceKit

/// What sets auth-service apart before configuration is read.
public let serviceDefaults = ServiceDefaults(
    name: "auth-service", apiPrefix: "/v1/auth", port: 8081, schema: "auth", databaseRole: "auth_service", requiredPeers: [],
    // The largest body it takes is a profile change with 32 preferences of 1 KiB: 64 KiB is room enough, and a
    // megabyte of JSON padding around a sign-up is refused before it is read.
    maxBodyBytes: 64 << 10
)

/// What the executable runs.
public enum AuthServiceDefinition: ServiceDefinition {
    public static var defaults: ServiceDefaults { serviceDefaults }

    public static func buildApplication(reader: ConfigReader, routeTable: RouteTable) async throws -> ServiceApplication {
        try await AuthService.buildApplication(reader: reader, routeTable: routeTable)
    }

    public static func ownSettings(reader: ConfigReader) throws -> [Setting] {
        try AuthConfiguration(reader: reader).declaredSettings
    }
}

/// The composition root: configuration, the kit, stores, use cases, routes, then the application.
public func buildApplication(
    reader: ConfigReader, routeTable: RouteTable = RouteTable()
) async throws -> ServiceApplication {
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let authConfiguration = try AuthConfiguration(reader: reader)
    let core = ServiceCore(configuration: configuration, routeTable: routeTable)
    let pool = core.pool
    let hasher = try await PasswordHasher.make(cost: authConfiguration.bcryptCost, lines: authConfiguration.hashingLines)

    let signingKeys = SigningKeys(pool: pool, schedule: authConfiguration.keySchedule, logger: core.logger)
    let accounts = AccountStore(pool: pool)
    let sessions = SessionStore(pool: pool)
    let throttle = ThrottleStore(pool: pool)
    let mailOutbox = MailOutbox(pool: pool)
    let counters = AuthCounters(factory: core.metrics)
    let issuer = TokenIssuer(keys: signingKeys, accessTokenLifetime: authConfiguration.accessTokenLifetime,
                             sessions: authConfiguration.sessions)
    let verifier = AccessTokenVerifier(keys: signingKeys, revocations: LiveSessionCheck(sessions: sessions))
    let catalog = CatalogPeer(baseURL: authConfiguration.catalogURL, httpClient: core.httpClient)

    let passwords = PasswordCheck(accounts: accounts, throttle: throttle, hasher: hasher,
                                  devices: KnownDevices(pool: pool), counters: counters)
    let signIn = SignIn(passwords: passwords, issuer: issuer, pool: pool, counters: counters)
    let signedInAccount = SignedInAccount(accounts: accounts)
    let requestMail = RequestMail(outbox: mailOutbox, throttle: throttle, limits: authConfiguration.mail.limits)
    let followLink = FollowLink(pool: pool, hasher: hasher)

    let router = try core.router()
    let api = router.group("v1/auth")
    let authenticated = router.group("v1/auth")
        .add(middleware: AuthenticationMiddleware(verifier: verifier))
        .group(context: AuthenticatedContext.self)
    AccountController(
        signUp: SignUp(accounts: accounts, hasher: hasher, issuer: issuer, pool: pool, throttle: throttle,
                       limit: authConfiguration.signUpLimit, mail: requestMail, signIn: signIn),
        signIn: signIn,
        signedInAccount: signedInAccount,
        updateProfile: UpdateProfile(signedInAccount: signedInAccount, catalog: catalog, pool: pool),
        changePassword: ChangePassword(passwords: passwords, accounts: accounts, hasher: hasher, pool: pool),
        deleteAccount: DeleteAccount(passwords: passwords, pool: pool),
        trustedProxies: authConfiguration.trustedProxies
    ).register(public: api, authenticated: authenticated)
    SessionController(
        refreshSession: RefreshSession(pool: pool, issuer: issuer, policy: authConfiguration.sessions,
                                       counters: counters),
        signOut: SignOut(sessions: sessions, policy: authConfiguration.sessions),
        endSession: EndSession(pool: pool),
        sessions: sessions, verifier: verifier
    ).register(public: api, authenticated: authenticated)
    RecoveryController(
        requestMail: requestMail,
        followLink: followLink, signedInAccount: signedInAccount, trustedProxies: authConfiguration.trustedProxies
    ).register(public: api, authenticated: authenticated)
    LinkPages(followLink: followLink).register(on: router)
    KeysController(keys: signingKeys, sessions: sessions, accounts: accounts,
                   revocationWindow: authConfiguration.revocationWindow, peerSecret: configuration.peerSecret)
        .register(on: router, api: api)

    return core.application(
        router: router, migrations: AuthMigrations.all,
        // After the migrations: a fresh database gets its first key before any request.
        beforeServerStarts: [{ try await signingKeys.refresh() }],
        background: [
            MailSender(outbox: mailOutbox, smtp: SMTPClient(settings: authConfiguration.mail.smtp),
                       configuration: authConfiguration.mail, counters: counters, logger: core.logger),
            AuthMaintenance(keys: signingKeys, sessions: sessions, accounts: accounts, throttle: throttle,
                            configuration: authConfiguration, logger: core.logger),
        ]
    )
}
