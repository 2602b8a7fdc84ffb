import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Postgres
import ServiceKit
import TestSupport

/// A service built with the kit alone, plus a few routes that exercise it.
enum KitTestApp {
    static let defaults = ServiceDefaults(
        name: "kit-test", apiPrefix: "/v1/kit", port: 0, schema: "kit", databaseRole: "kit", requiredPeers: []
    )

    static let migrations = [
        Migration(1, "create_widgets", sql: "CREATE TABLE widgets (id serial PRIMARY KEY, name text NOT NULL);"),
        // An index over a user's text, named as our indexes are (`<table>_by_<field>`).
        Migration(2, "index_widget_names", sql: "CREATE INDEX widgets_by_name ON widgets (name);"),
    ]

    struct Widget: Codable, Sendable { let name: String; let size: Int }

    /// `slowStarted`: called when `/v1/kit/slow` has begun to answer, for a test that needs a request in flight.
    static func build(configuration: ServiceConfiguration, slowStarted: @escaping @Sendable () -> Void = {}) throws
        -> ServiceApplication {
        let core = ServiceCore(configuration: configuration)
        let router = try core.router()
        router.post("/v1/kit/widgets") { request, context -> Response in
            let widget = try await request.decodeJSON(as: Widget.self, context: context)
            try await core.pool.query("INSERT INTO widgets (name) VALUES (\(widget.name))")
            return try ServiceJSON.encoder.encode(widget).jsonResponse(status: .created)
        }
        router.get("/v1/kit/widgets/count") { _, _ -> Response in
            let count = try await core.pool.query("SELECT count(*) FROM widgets").scalar(Int.self)
            return try ServiceJSON.encoder.encode(["count": count]).jsonResponse()
        }
        router.get("/v1/kit/slow") { _, _ -> Response in
            slowStarted()
            try await Task.sleep(for: .seconds(1))
            return Data(#"{"slow":true}"#.utf8).jsonResponse()
        }
        router.get("/v1/kit/crash") { _, _ -> Response in
            struct SecretInternalError: Error { let password = "hunter2" }
            throw SecretInternalError()
        }
        return core.application(router: router, migrations: migrations)
    }

    /// Runs `test` against a kit app on a fresh database: through its router, or over real HTTP (`.live`) where the
    /// HTTP parser matters.
    static func withApp(
        environment: [String: String] = [:],
        testing: TestingSetup = .router,
        _ test: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await withTestDatabase { database in
            let configuration = try testServiceConfiguration(
                defaults: defaults, databaseURL: database.connectionString, environment: environment
            )
            try await build(configuration: configuration).test(testing, test)
        }
    }
}

