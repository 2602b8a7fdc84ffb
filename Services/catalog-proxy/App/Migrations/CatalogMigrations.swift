import Postgres

/// The catalog schema's migrations: numbered from 1, append-only, never edited once released (the migrator refuses an
/// edited one). Each runs in the schema, in one transaction with the others pending.
enum CatalogMigrations {
    static let all: [Migration] = []
}
