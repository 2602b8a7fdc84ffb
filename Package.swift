// swift-tools-version:6.1
import PackageDescription

/// Every target of ours compiles in Swift 6 mode with these upcoming features on.
var strictSettings: [SwiftSetting] {
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]
}

/// A product of another package. Only the server side (the services, their tests, the tools, `favme`) uses any, and
/// only with the `Server` trait: an app that depends on this package with `traits: []` resolves none of them (SwiftPM
/// leaves out a package that only disabled traits use), so adding the client fetches no server package.
func external(_ name: String, _ package: String) -> Target.Dependency {
    .product(name: name, package: package, condition: .when(traits: ["Server"]))
}

let hummingbird = external("Hummingbird", "hummingbird")
let hummingbirdTesting = external("HummingbirdTesting", "hummingbird")
let configuration = external("Configuration", "swift-configuration")
let argumentParser = external("ArgumentParser", "swift-argument-parser")
let logging = external("Logging", "swift-log")
let metrics = external("CoreMetrics", "swift-metrics")
let serviceLifecycle = external("ServiceLifecycle", "swift-service-lifecycle")
let httpClient = external("AsyncHTTPClient", "async-http-client")
let jwtKit = external("JWTKit", "jwt-kit")
let crypto = external("Crypto", "swift-crypto")
let nioCore = external("NIOCore", "swift-nio")
let nioHTTP1 = external("NIOHTTP1", "swift-nio")
let nioPosix = external("NIOPosix", "swift-nio")
let nioSSL = external("NIOSSL", "swift-nio-ssl")
let tracing = external("Tracing", "swift-distributed-tracing")
let otel = external("OTel", "swift-otel")
let prometheus = external("Prometheus", "swift-prometheus")
let bcrypt = external("HummingbirdBcrypt", "hummingbird-auth")

extension Target {
    /// One deployable: a library holding all of the service's code (testable in-process) and a thin executable
    /// named like the deployable.
    @MainActor
    static func service(_ executable: String, module: String, dependencies: [Target.Dependency] = []) -> [Target] {
        [
            .target(
                name: module,
                dependencies: ["Contracts", "Locking", "ServiceKit", "Postgres", hummingbird, configuration, logging]
                    + dependencies,
                path: "Services/\(executable)/App",
                swiftSettings: strictSettings
            ),
            .executableTarget(
                name: executable,
                dependencies: [.target(name: module), "ServiceKit", argumentParser],
                path: "Services/\(executable)/Main",
                swiftSettings: strictSettings
            ),
        ]
    }
}

/// Code shared by the services, and shared with clients (Contracts, FavoriteMeClient, favme).
let sharedTargets: [Target] = [
    // Foundation-only types shared with clients (an iOS app can import this module).
    .target(name: "Contracts", path: "Shared/Contracts", swiftSettings: strictSettings),

    // The API for apps: typed calls, sessions that refresh themselves, writes that survive being offline. Foundation
    // (URLSession) and Contracts only: no server code.
    // Its privacy manifest is a resource, so that an app's privacy report includes it; its DocC catalog is
    // FavoriteMeClient.docc.
    .target(
        name: "FavoriteMeClient", dependencies: ["Contracts"], path: "Clients/FavoriteMeClient",
        resources: [.copy("PrivacyInfo.xcprivacy")], swiftSettings: strictSettings
    ),
    // The command-line client on the same library.
    .executableTarget(
        name: "favme", dependencies: ["FavoriteMeClient", "Contracts", argumentParser], path: "Clients/favme",
        swiftSettings: strictSettings
    ),

    // The project's one lock (see Locked.swift for why not Synchronization.Mutex).
    .target(name: "Locking", path: "Shared/Locking", swiftSettings: strictSettings),

    // PostgreSQL through libpq (Debian: libpq-dev), wrapped once.
    .systemLibrary(
        name: "CLibpq",
        path: "Shared/CLibpq",
        pkgConfig: "libpq",
        providers: [.apt(["libpq-dev"])]
    ),
    // In layers, each a target that sees only those below it: values (SQL, encoding, errors: no threads, no
    // locks), the session's thread (where a session runs and waits), the session (libpq's protocol, pipelines,
    // prepared statements, transactions), and the pool (leases, deadlines, cancels, replacement; the listener and
    // migrations), which is what the services import.
    .target(name: "PostgresValues", dependencies: ["CLibpq"], path: "Shared/Postgres/Values", swiftSettings: strictSettings),
    .target(
        name: "PostgresWaiting", dependencies: ["CLibpq", "Locking"], path: "Shared/Postgres/Waiting",
        swiftSettings: strictSettings
    ),
    .target(
        name: "PostgresSession", dependencies: ["CLibpq", "Locking", "PostgresValues", "PostgresWaiting"],
        path: "Shared/Postgres/Session", swiftSettings: strictSettings
    ),
    .target(
        name: "Postgres",
        dependencies: ["Locking", "PostgresSession", "PostgresValues", logging, metrics, serviceLifecycle, tracing],
        path: "Shared/Postgres/Pool",
        swiftSettings: strictSettings
    ),

    // Server plumbing every service needs, written once, and the published OpenAPI document of the whole API (a
    // resource: every service serves it; phones never carry it).
    .target(
        name: "ServiceKit",
        dependencies: [
            "Contracts", "Locking", "Postgres", hummingbird, configuration, logging, metrics, serviceLifecycle, httpClient,
            argumentParser, jwtKit, crypto,
            prometheus, tracing, otel,
        ],
        path: "Shared/ServiceKit",
        resources: [.copy("openapi.json")],
        swiftSettings: strictSettings
    ),

    // An append-only event log in PostgreSQL and its projections: favorites-service's alone, so it lives there, a
    // module of its own (its own tests, no HTTP).
    .target(
        name: "EventStore", dependencies: ["Postgres", "Locking", logging, metrics, serviceLifecycle],
        path: "Services/favorites-service/EventStore", swiftSettings: strictSettings
    ),

    // Real PostgreSQL for tests (a throwaway cluster when DATABASE_URL is not given) and test helpers.
    .target(
        name: "TestSupport",
        dependencies: [
            "Locking", "Postgres", "ServiceKit", "Contracts", hummingbird, hummingbirdTesting, logging, configuration, jwtKit,
            nioCore,
        ],
        path: "Shared/TestSupport",
        exclude: ["tls-record-relay.py"],
        swiftSettings: strictSettings
    ),
]

let serviceTargets: [Target] =
    Target.service("auth-service", module: "AuthService", dependencies: [
        jwtKit, crypto, metrics, bcrypt, nioCore, nioPosix, nioSSL,
    ])
    + Target.service("catalog-proxy", module: "CatalogProxy", dependencies: [
        httpClient, crypto, metrics, serviceLifecycle, nioCore, nioHTTP1,
    ])
    + Target.service("favorites-service", module: "FavoritesService", dependencies: [
        "EventStore", httpClient, crypto, metrics, serviceLifecycle, nioCore, nioHTTP1,
    ])

/// Tools the tests and benchmarks run, and the tests.
let toolAndTestTargets: [Target] = [
    // Ticketmaster and Rijksmuseum stand-in serving the recorded fixtures (tests and the keyless stack).
    .target(
        name: "ReplayUpstream",
        dependencies: ["Locking", hummingbird, nioCore],
        path: "Tools/ReplayUpstream",
        swiftSettings: strictSettings
    ),
    .executableTarget(
        name: "replay-upstream",
        dependencies: ["ReplayUpstream", hummingbird, argumentParser],
        path: "Tools/replay-upstream",
        swiftSettings: strictSettings
    ),
    // What a heart costs on the device with a large synced copy (bench/client.sh).
    .executableTarget(
        name: "client-bench",
        dependencies: ["FavoriteMeClient", "Contracts", argumentParser],
        path: "bench/client-bench",
        swiftSettings: strictSettings
    ),
    // Throughput of the Postgres module, compared with pgbench by bench/postgres.sh.
    .executableTarget(
        name: "postgres-bench",
        dependencies: ["Postgres", argumentParser],
        path: "bench/postgres-bench",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "APIContractTests",
        dependencies: [
            "AuthService", "CatalogProxy", "FavoritesService", "ServiceKit", "TestSupport", "Contracts",
            hummingbird, hummingbirdTesting, configuration,
        ],
        path: "Tests/APIContractTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "ContractsTests",
        dependencies: ["Contracts"],
        path: "Tests/ContractsTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "EndToEndTests",
        dependencies: [
            "Contracts", "FavoriteMeClient", "Locking", "Postgres", "ServiceKit", "TestSupport", httpClient, logging,
            nioCore, nioHTTP1,
        ],
        path: "Tests/EndToEndTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "FavoriteMeClientTests",
        dependencies: ["FavoriteMeClient", "Contracts"],
        path: "Tests/FavoriteMeClientTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "EventStoreTests",
        dependencies: ["EventStore", "Postgres", "TestSupport",
                       .product(name: "MetricsTestKit", package: "swift-metrics"),
                       .product(name: "InMemoryLogging", package: "swift-log")],
        path: "Tests/EventStoreTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "LockingTests",
        dependencies: ["Locking"],
        path: "Tests/LockingTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "PostgresTests",
        dependencies: ["Postgres", "PostgresSession", "PostgresValues", "PostgresWaiting", "TestSupport"],
        path: "Tests/PostgresTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "AuthServiceTests",
        dependencies: [
            "AuthService", "Locking", "ServiceKit", "TestSupport", "Contracts", "Postgres", hummingbird,
            hummingbirdTesting, jwtKit, crypto, logging, configuration, httpClient, nioCore, nioPosix,
        ],
        path: "Tests/AuthServiceTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "CatalogProxyTests",
        dependencies: [
            "CatalogProxy", "Locking", "Postgres", "ReplayUpstream", "ServiceKit", "TestSupport", "Contracts", metrics, hummingbird,
            hummingbirdTesting, logging, httpClient, jwtKit, nioCore,
        ],
        path: "Tests/CatalogProxyTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "FavoritesServiceTests",
        dependencies: [
            "FavoritesService", "CatalogProxy", "ReplayUpstream", "EventStore", "ServiceKit", "TestSupport",
            "Contracts", "Postgres", "FavoriteMeClient", hummingbird, hummingbirdTesting, nioCore, nioHTTP1, httpClient,
        ],
        path: "Tests/FavoritesServiceTests",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "ServiceKitTests",
        dependencies: [
            "ServiceKit", "TestSupport", "Contracts", "Postgres", hummingbird, hummingbirdTesting, httpClient,
            serviceLifecycle, logging, argumentParser, nioCore,
            nioHTTP1,
        ],
        path: "Tests/ServiceKitTests",
        swiftSettings: strictSettings
    ),
]

let package = Package(
    name: "favoriteme-cloud",
    // The client library's floor: iOS 17 and macOS 14, which its observable model (Observation) needs; every API it
    // uses exists there (scripts/check-client-availability checks the sources against a list of newer ones). macOS 14
    // is also what Hummingbird needs, for the services built on a Mac from the same manifest.
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "Contracts", targets: ["Contracts"]),
        .library(name: "FavoriteMeClient", targets: ["FavoriteMeClient"]),
        .executable(name: "favme", targets: ["favme"]),
        .executable(name: "auth-service", targets: ["auth-service"]),
        .executable(name: "catalog-proxy", targets: ["catalog-proxy"]),
        .executable(name: "favorites-service", targets: ["favorites-service"]),
    ],
    // `Server` (on by default) builds everything; an app turns it off to get the client alone (see `external`).
    traits: [
        .trait(name: "Server", description: "The services, their tools and tests, and favme."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
        // OTLP over HTTP only: the gRPC exporter would bring grpc-swift, which nothing else needs.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
    ],
    targets: sharedTargets + serviceTargets + toolAndTestTargets
)
