import ArgumentParser
import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Postgres
@testable import ServiceKit
import ServiceLifecycle
import TestSupport
import Testing

@Suite struct OperationsTests {
    @Test func migrationsRunBeforeTheServerStartsInTheServiceSchema() async throws {
        try await withTestDatabase { database in
            let configuration = try testServiceConfiguration(
                defaults: KitTestApp.defaults, databaseURL: database.connectionString
            )
            try await KitTestApp.build(configuration: configuration).test(.router) { client in
                try await client.execute(uri: "/v1/kit/widgets/count", method: .get) { #expect($0.status == .ok) }
            }
            let pool = database.makePool(size: 1)
            let recorded = try await pool.query("SELECT name FROM kit.schema_migrations").values(String.self)
            #expect(recorded == ["create_widgets", "index_widget_names"])
            await pool.close()
        }
    }

    @Test func checkModeRefusesToStartWithPendingMigrations() async throws {
        try await withTestDatabase { database in
            let configuration = try testServiceConfiguration(
                defaults: KitTestApp.defaults, databaseURL: database.connectionString,
                environment: ["DATABASE_MIGRATE": "check"]
            )
            await #expect(throws: MigrationError.pending(["create_widgets", "index_widget_names"])) {
                try await KitTestApp.build(configuration: configuration).test(.router) { _ in }
            }
        }
    }

    @Test func metricsExposeRequestsAndThePool() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/widgets/count", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.contains(#"http_requests_total{method="GET",route="/v1/kit/widgets/count",status="200"} 1"#))
                #expect(text.contains("http_request_duration_seconds_bucket"))
                #expect(text.contains("db_pool_connections_in_use"))
                #expect(text.contains("db_pool_lease_wait_seconds_count"))
            }
        }
    }

    @Test func healthIsAlsoServedUnderTheAPIPrefix() async throws {
        try await KitTestApp.withApp { client in
            for path in ["/health/live", "/health/ready", "/v1/kit/health/live", "/v1/kit/health/ready"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .ok, "\(path)") }
            }
        }
    }

    @Test func readinessFollowsTheDatabaseWithoutARestart() async throws {
        let cluster = try TestCluster.create()
        let configuration = try testServiceConfiguration(
            defaults: KitTestApp.defaults, databaseURL: cluster.connectionString
        )
        try await KitTestApp.build(configuration: configuration).test(.router) { client in
            try await client.execute(uri: "/health/ready", method: .get) { #expect($0.status == .ok) }
            try cluster.stop()
            try await client.execute(uri: "/health/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.problem?.type == .notReady)
                #expect(response.problem?.detail.contains("database") == true)
            }
            // A request that needs the database gets a clean 503, not a 500.
            try await client.execute(uri: "/v1/kit/widgets/count", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.problem?.type == .databaseUnavailable)
                #expect(response.headers[.retryAfter] == "1")
            }
            try cluster.start()
            var recovered = false
            for _ in 0..<50 where !recovered {
                try await client.execute(uri: "/health/ready", method: .get) { recovered = $0.status == .ok }
                if !recovered { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(recovered)
        }
        try cluster.stop()
    }

    /// A peer down is reported, not a reason to leave the load balancer: the replica still serves what does not
    /// need that peer.
    @Test func aPeerDownIsReportedWithoutLeaving() async throws {
        let deadPort = try freeLoopbackPort()
        try await withTestDatabase { database in
            var defaults = KitTestApp.defaults
            defaults.requiredPeers = [.auth]
            let configuration = try testServiceConfiguration(
                defaults: defaults, databaseURL: database.connectionString,
                environment: ["AUTH_URL": "http://127.0.0.1:\(deadPort)", "READINESS_TIMEOUT_MS": "500"]
            )
            try await KitTestApp.build(configuration: configuration).test(.router) { client in
                try await client.execute(uri: "/health/ready", method: .get) { response in
                    #expect(response.status == .ok)
                    let report = try? JSONDecoder().decode(ReadinessReport.self, from: Data(response.body.readableBytesView))
                    #expect(report?.status == .degraded)
                    #expect(report?.checks == ["database": "ok", "auth": "unreachable"])
                }
                try await client.execute(uri: "/health/live", method: .get) { #expect($0.status == .ok) }
            }
        }
    }

    @Test func gracefulShutdownFinishesInFlightRequests() async throws {
        try await withTestDatabase { database in
            let port = try freeLoopbackPort()
            let configuration = try testServiceConfiguration(
                defaults: KitTestApp.defaults, databaseURL: database.connectionString,
                environment: ["HTTP_PORT": "\(port)"]
            )
            let (slowStarted, slowStart) = AsyncStream.makeStream(of: Void.self)
            let app = try KitTestApp.build(configuration: configuration, slowStarted: { slowStart.yield() })
            let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "test")))
            let running = Task { try await group.run() }
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            let base = "http://127.0.0.1:\(port)"
            try await waitForStatus(client, base + "/health/live", 200)

            let slow = Task { () -> (Int, String) in
                let response = try await client.execute(HTTPClientRequest(url: base + "/v1/kit/slow"), timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1024)
                return (Int(response.status.code), String(buffer: body))
            }
            var started = slowStarted.makeAsyncIterator()
            await started.next()  // the slow request is in flight
            await group.triggerGracefulShutdown()

            let (status, body) = try await slow.value
            #expect(status == 200)
            #expect(body == #"{"slow":true}"#)
            try await running.value  // the group (server, client, pool) ended cleanly
            await #expect(throws: (any Error).self) {
                _ = try await client.execute(HTTPClientRequest(url: base + "/health/live"), timeout: .seconds(2))
            }
            try await client.shutdown()
        }
    }

    func waitForStatus(_ client: HTTPClient, _ url: String, _ status: Int) async throws {
        for _ in 0..<100 {
            if let response = try? await client.execute(HTTPClientRequest(url: url), timeout: .seconds(1)),
               response.status.code == status {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSupportError("\(url) never answered \(status)")
    }
}

@Suite struct RouteTableTests {
    @Test func matchesPatternsSegmentBySegment() {
        let pattern = "/v1/favorites/:experience/:itemId".split(separator: "/")
        #expect(RouteTable.matches(pattern, "/v1/favorites/rijksmuseum/SK-C-5".split(separator: "/")))
        #expect(!RouteTable.matches(pattern, "/v1/favorites/rijksmuseum".split(separator: "/")))
        #expect(!RouteTable.matches(pattern, "/v1/favorites/a/b/c".split(separator: "/")))
        #expect(RouteTable.matches("/static/**".split(separator: "/"), "/static/a/b".split(separator: "/")))
    }
}

@Suite struct ConfigurationTests {
    @Test func environmentVariablesMapToSettings() throws {
        let configuration = try testServiceConfiguration(
            defaults: KitTestApp.defaults, databaseURL: "postgresql://u:secret@db:5432/app",
            environment: [
                "DATABASE_POOL_SIZE": "12", "DATABASE_LEASE_TIMEOUT_MS": "250", "HTTP_MAX_BODY_BYTES": "4096",
                "DATABASE_SCHEMA": "other", "LOG_FORMAT": "text", "DATABASE_MIGRATE": "check",
            ]
        )
        #expect(configuration.pool.size == 12)
        #expect(configuration.pool.leaseTimeout == .milliseconds(250))
        #expect(configuration.maxBodyBytes == 4096)
        #expect(configuration.schema == "other")
        #expect(configuration.logFormat == .text)
        #expect(configuration.migration == .check)
        #expect(configuration.database.applicationName == "kit-test")
    }

    @Test func unusableValuesAreRefusedByName() {
        let error = #expect(throws: ConfigurationError.self) {
            try testServiceConfiguration(
                defaults: KitTestApp.defaults, databaseURL: "postgresql://u@db/app",
                environment: ["DATABASE_MIGRATE": "chek", "HTTP_PORT": "abc", "DATABASE_POOL_SIZE": "0",
                              "LOG_LEVEL": "verbose"]
            )
        }
        let problems = error?.problems.joined(separator: "\n") ?? ""
        #expect(error?.problems.count == 4)
        #expect(problems.contains("DATABASE_MIGRATE must be one of auto, check, got \"chek\""))
        #expect(problems.contains("HTTP_PORT must be a whole number"))
        #expect(problems.contains("DATABASE_POOL_SIZE must be a whole number in 1...256"))
        #expect(problems.contains("LOG_LEVEL must be one of"))
    }

    @Test func peerURLsMustBeUsableAndLoseTheirTrailingSlash() throws {
        var defaults = KitTestApp.defaults
        defaults.requiredPeers = [.auth, .catalog]
        let error = #expect(throws: ConfigurationError.self) {
            try testServiceConfiguration(defaults: defaults, databaseURL: "postgresql://u@db/app",
                                         environment: ["AUTH_URL": "auth-service:8081",
                                                       "CATALOG_URL": "http://user:secret@catalog:8082"])
        }
        #expect(error?.problems.sorted() == ["AUTH_URL must be an http(s) base URL without query or credentials",
                                              "CATALOG_URL must be an http(s) base URL without query or credentials"])
        let configuration = try testServiceConfiguration(
            defaults: defaults, databaseURL: "postgresql://u@db/app",
            environment: ["AUTH_URL": "http://gateway:8070/", "CATALOG_URL": "http://gateway:8070"])
        #expect(configuration.peers[.auth] == "http://gateway:8070")
        #expect(configuration.peers[.catalog] == "http://gateway:8070")
    }

    @Test func flagsAreParsedLikeTheEnvironment() throws {
        let valid = try ServiceOptions.parse(["--port", "8099", "--log-level", "debug"])
        let configuration = try ServiceConfiguration(reader: valid.configReader(), defaults: KitTestApp.defaults)
        #expect(configuration.port == 8099)
        #expect(configuration.logLevel == .debug)
        let invalid = try ServiceOptions.parse(["--port", "70000"])
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration(reader: invalid.configReader(), defaults: KitTestApp.defaults)
        }
    }

    @Test func environmentNamesFollowTheKeys() {
        #expect(StrictSettings.environmentName("http.maxBodyBytes") == "HTTP_MAX_BODY_BYTES")
        #expect(StrictSettings.environmentName("database.url") == "DATABASE_URL")
    }
}
