import Foundation
import PostgresSession
import PostgresValues

/// One schema change: numbered, named, plain SQL. Append-only: once released, never edited (the migrator refuses
/// to start when an applied migration's text changed).
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// The SQL, a compile-time literal like every statement of ours.
    public let sql: StaticString

    public init(_ version: Int, _ name: String, sql: StaticString) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Identifies the SQL text, to notice an edited migration.
    public var checksum: String { Self.checksum(of: sql.description) }

    /// FNV-1a: enough to notice a change, no crypto dependency needed.
    public static func checksum(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}

public enum MigrationError: Error, Equatable, CustomStringConvertible {
    /// The database has migrations this build does not declare, or in another order: an older build against a newer
    /// schema, or a migration was removed or renumbered.
    case inconsistent(applied: [String], declared: [String])
    /// An applied migration's SQL differs from the declared one.
    case edited(String)
    /// A dry run found migrations still to apply.
    case pending([String])
    /// Declared versions must be 1, 2, 3, … in order.
    case badNumbering

    public var description: String {
        switch self {
        case .inconsistent(let applied, let declared):
            "applied migrations \(applied) are not a prefix of the declared \(declared)"
        case .edited(let name): "migration \(name) was edited after it was applied"
        case .pending(let names): "migrations pending: \(names)"
        case .badNumbering: "migrations must be numbered 1, 2, 3, … without gaps"
        }
    }
}

/// Applies a service's migrations to its own schema.
///
/// Everything happens in one transaction under an advisory lock keyed by the schema, so several replicas starting at
/// once apply each migration exactly once (the others wait, then find nothing to do), and a failing migration leaves
/// no trace. The applied list must be a prefix of the declared one, or the service refuses to start.
public struct Migrator: Sendable {
    public let schema: String
    public let migrations: [Migration]

    public init(schema: String, migrations: [Migration]) {
        self.schema = schema
        self.migrations = migrations
    }

    /// Applies what is pending and returns the names applied now. With `dryRun`, applies nothing and throws
    /// ``MigrationError/pending(_:)`` if anything would be.
    @discardableResult
    public func migrate(_ pool: DatabasePool, dryRun: Bool = false) async throws -> [String] {
        guard migrations.map(\.version) == migrations.indices.map({ $0 + 1 }) else {
            throw MigrationError.badNumbering
        }
        let schema = self.schema
        let migrations = self.migrations
        return try await pool.withTransaction(timeout: .seconds(300)) { connection in
            // First, so concurrent migrators queue here; released at COMMIT or ROLLBACK.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\("migrations:" + schema)))")
            let exists = try await connection.query("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = \(schema))")
                .scalar(Bool.self)
            if !exists {
                // Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the database.
                try await connection.query("CREATE SCHEMA \(identifier: schema)")
            }
            try await connection.query("SELECT set_config('search_path', \(SQL.quoteIdentifier(schema)), true)")
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let applied = try await connection.query("SELECT name, checksum FROM schema_migrations ORDER BY version")
                .rows.map { (name: try $0.decode(String.self, column: "name"),
                             checksum: try $0.decode(String.self, column: "checksum")) }
            let declared = migrations.map(\.name)
            guard declared.starts(with: applied.map(\.name)) else {
                throw MigrationError.inconsistent(applied: applied.map(\.name), declared: declared)
            }
            for (migration, record) in zip(migrations, applied) where migration.checksum != record.checksum {
                throw MigrationError.edited(migration.name)
            }
            let pending = Array(migrations.dropFirst(applied.count))
            if dryRun, !pending.isEmpty { throw MigrationError.pending(pending.map(\.name)) }
            for migration in pending {
                try await connection.execute(SQLScript(migration.sql))  // a literal, checked at compile time
                try await connection.query("""
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """)
            }
            return pending.map(\.name)
        }
    }
}
