import Foundation
import Postgres

/// A real PostgreSQL server for tests, with no manual step.
///
/// With `DATABASE_URL` set, tests use that server (its role must be allowed to create databases). Otherwise the first
/// test to ask starts a throwaway cluster (``TestCluster``) shared by the whole test process.
///
/// Tests never share a database: each gets a fresh copy of a migrated template (see ``database(migrators:)``).
public actor TestPostgres {
    public static let shared = TestPostgres()

    /// The superuser connection string of the server in use, found or started once (a task: concurrent first callers
    /// all await the one start).
    private var server: Task<String, any Error>?
    /// Template database per distinct set of migrations, built once per process. A task, not a name, because the
    /// actor is re-entrant: concurrent tests asking for the same template must all await the one build.
    private var templates: [String: Task<String, any Error>] = [:]
    private var counter = 0

    /// The connection string of a role allowed to create databases.
    public func adminURL() async throws -> String {
        if let server { return try await server.value }
        let started = Task<String, any Error> {
            if let given = ProcessInfo.processInfo.environment["DATABASE_URL"], !given.isEmpty { return given }
            // initdb and the server's start block for seconds: on a thread of their own, not on the cooperative pool
            // every test shares (two threads on two cores), where other tests' timeouts would run out meanwhile.
            return try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread { continuation.resume(with: Result { try TestCluster.create().connectionString }) }
            }
        }
        server = started
        return try await started.value
    }

    /// A new database for one test: a copy of a template to which `migrators` were applied.
    public func database(migrators: [Migrator] = []) async throws -> TestDatabase {
        let admin = try await adminURL()
        let template = try await template(for: migrators, admin: admin)
        counter += 1
        let name = "test_\(getpid())_\(counter)"
        try await Self.withAdminPool(admin) { pool in
            try await pool.query("CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: template)")
        }
        return TestDatabase(
            name: name,
            connectionString: try ConnectionConfiguration.connectionString(admin, database: name),
            adminConnectionString: admin
        )
    }

    private func template(for migrators: [Migrator], admin: String) async throws -> String {
        let fingerprint = Migration.checksum(of: migrators.map { migrator in
            migrator.schema + ":" + migrator.migrations.map(\.checksum).joined(separator: ",")
        }.joined(separator: ";"))
        if let existing = templates[fingerprint] { return try await existing.value }
        let build = Task {
            let name = "template_\(getpid())_\(fingerprint)"
            try await Self.withAdminPool(admin) { pool in
                try await pool.query("DROP DATABASE IF EXISTS \(identifier: name)")
                try await pool.query("CREATE DATABASE \(identifier: name)")
            }
            let templateURL = try ConnectionConfiguration.connectionString(admin, database: name)
            // A template must have no open sessions while it is copied: the pool is closed before any copy.
            try await Self.withAdminPool(templateURL) { pool in
                for migrator in migrators { try await migrator.migrate(pool) }
            }
            return name
        }
        templates[fingerprint] = build
        return try await build.value
    }

    /// Runs `body` with a one-session pool on `connectionString`, closed afterwards.
    @discardableResult
    static func withAdminPool<Value: Sendable>(
        _ connectionString: String,
        _ body: (DatabasePool) async throws -> Value
    ) async throws -> Value {
        // CREATE and DROP DATABASE queue behind each other when many tests start at once: give them minutes.
        let pool = DatabasePool(
            connection: ConnectionConfiguration(connectionString: connectionString, applicationName: "favoriteme-tests",
                                                statementTimeout: .seconds(300)),
            pool: PoolConfiguration(size: 1, leaseTimeout: .seconds(300), queryTimeout: .seconds(300))
        )
        return try await pool.closing(after: body)
    }
}

/// One test's database. Drop it when the test ends (``withTestDatabase(migrators:_:)`` does).
public struct TestDatabase: Sendable {
    public let name: String
    /// Superuser connection string to this database.
    public let connectionString: String
    let adminConnectionString: String

    /// A pool on this database.
    public func makePool(
        size: Int = 4,
        // Generous: tests run in parallel on small machines, and a slow lease is not what they test.
        leaseTimeout: Duration = .seconds(60),
        applicationName: String = "favoriteme-tests",
        searchPath: String? = nil
    ) -> DatabasePool {
        DatabasePool(
            connection: ConnectionConfiguration(
                connectionString: connectionString, applicationName: applicationName, searchPath: searchPath,
                statementTimeout: .seconds(60)
            ),
            pool: PoolConfiguration(size: size, leaseTimeout: leaseTimeout, queryTimeout: .seconds(60))
        )
    }

    public func drop() async throws {
        try await TestPostgres.withAdminPool(adminConnectionString) { pool in
            try await pool.query("DROP DATABASE IF EXISTS \(identifier: name) WITH (FORCE)")
        }
    }
}

/// Runs `body` with a fresh migrated database, dropped afterwards whatever happens.
public func withTestDatabase<Value: Sendable>(
    migrators: [Migrator] = [],
    _ body: (TestDatabase) async throws -> Value
) async throws -> Value {
    let database = try await TestPostgres.shared.database(migrators: migrators)
    do {
        let value = try await body(database)
        try await database.drop()
        return value
    } catch {
        try? await database.drop()
        throw error
    }
}

/// Runs `body` with a pool on a fresh migrated database; the pool is closed and the database dropped afterwards.
public func withTestPool<Value: Sendable>(
    migrators: [Migrator] = [],
    size: Int = 4,
    searchPath: String? = nil,
    _ body: (DatabasePool, TestDatabase) async throws -> Value
) async throws -> Value {
    try await withTestDatabase(migrators: migrators) { database in
        try await database.makePool(size: size, searchPath: searchPath).closing { pool in
            try await body(pool, database)
        }
    }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
