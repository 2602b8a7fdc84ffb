import Postgres

/// The catalog schema's migrations: numbered from 1, append-only, never edited once released (the migrator refuses an
/// edited one). Each runs in the schema, in one transaction with the others pending.
enum CatalogMigrations {
    static let all: [Migration] = [
        Migration(1, "upstream_quota_days", sql: """
            -- Calls reserved from each upstream's daily quota, by every replica together (see DailyQuotaLedger).
            CREATE TABLE upstream_quota_days (
                upstream   text NOT NULL,
                day        date NOT NULL,          -- the UTC day the quota is for
                used       integer NOT NULL CHECK (used >= 0),
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (upstream, day)
            );
            """),
        Migration(2, "seen_items", sql: """
            -- The last normalized copy of each item an upstream sent, for every replica: the detail route's fallback
            -- while the upstream fails (see SeenItems).
            CREATE TABLE seen_items (
                experience text NOT NULL,
                item_id    text NOT NULL,
                item       jsonb NOT NULL,          -- a CatalogItem
                detailed   boolean NOT NULL,        -- from a detail (more facts) rather than a search result
                seen_at    timestamptz NOT NULL,
                PRIMARY KEY (experience, item_id)
            );
            CREATE INDEX seen_items_seen_at ON seen_items (seen_at);
            """),
    ]
}
