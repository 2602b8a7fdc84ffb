import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct MigratorTests {
    static let migrations = [
        Migration(1, "create_notes", sql: "CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL);"),
        Migration(2, "add_created_at", sql: "ALTER TABLE notes ADD COLUMN created_at timestamptz DEFAULT now();"),
    ]

    @Test func concurrentReplicasApplyEachMigrationOnce() async throws {
        try await withTestDatabase { database in
            let migrator = Migrator(schema: "notes_service", migrations: Self.migrations)
            let pools = (0..<4).map { _ in database.makePool(size: 1) }
            // Four "replicas" start at the same moment.
            let appliedCounts = try await withThrowingTaskGroup(of: Int.self) { group in
                for pool in pools { group.addTask { try await migrator.migrate(pool).count } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(appliedCounts.sorted() == [0, 0, 0, 2])
            let recorded = try await pools[0].query("SELECT version FROM notes_service.schema_migrations ORDER BY 1")
                .values(Int.self)
            #expect(recorded == [1, 2])
            let columns = try await pools[0].query("SELECT * FROM notes_service.notes").columns
            #expect(columns == ["id", "body", "created_at"])
            for pool in pools { await pool.close() }
        }
    }

    @Test func appliedListMustBeAPrefixOfTheDeclaredOne() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await Migrator(schema: "s", migrations: Self.migrations).migrate(pool)
            let older = Migrator(schema: "s", migrations: [
                Self.migrations[0], Migration(2, "something_else", sql: "SELECT 1;"),
            ])
            await #expect(throws: MigrationError.inconsistent(
                applied: ["create_notes", "add_created_at"], declared: ["create_notes", "something_else"])
            ) { try await older.migrate(pool) }
        }
    }

    @Test func editedMigrationsAreRefused() async throws {
        try await withTestPool(size: 1) { pool, _ in
            try await Migrator(schema: "s", migrations: Self.migrations).migrate(pool)
            let edited = Migrator(schema: "s", migrations: [
                Self.migrations[0],
                Migration(2, "add_created_at", sql: "ALTER TABLE notes ADD COLUMN created_at date;"),
            ])
            await #expect(throws: MigrationError.edited("add_created_at")) { try await edited.migrate(pool) }
        }
    }

    @Test func dryRunReportsPendingWithoutApplying() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let migrator = Migrator(schema: "s", migrations: Self.migrations)
            await #expect(throws: MigrationError.pending(["create_notes", "add_created_at"])) {
                try await migrator.migrate(pool, dryRun: true)
            }
            try await migrator.migrate(pool)
            #expect(try await migrator.migrate(pool, dryRun: true).isEmpty)
        }
    }

    @Test func aFailingMigrationLeavesNoTrace() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let broken = Migrator(schema: "s", migrations: [
                Self.migrations[0], Migration(2, "broken", sql: "CREATE TABLE extra (id int); SELECT no_such_column;"),
            ])
            await #expect(throws: PostgresError.self) { try await broken.migrate(pool) }
            let tables = try await pool.query("""
                SELECT count(*) FROM information_schema.tables WHERE table_schema = 's'
                """).scalar(Int.self)
            #expect(tables == 0)
        }
    }

    @Test func badNumberingIsRefused() async throws {
        try await withTestPool(size: 1) { pool, _ in
            let gap = Migrator(schema: "s", migrations: [Self.migrations[0], Migration(3, "gap", sql: "SELECT 1;")])
            await #expect(throws: MigrationError.badNumbering) { try await gap.migrate(pool) }
        }
    }
}
