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
        Migration(3, "fan_out_stores", sql: """
            -- Upstream answers many requests share (a search's page of ids, a maker's record), for every replica
            -- (see SharedAnswers).
            CREATE TABLE upstream_answers (
                key        text PRIMARY KEY,        -- the upstream, Accept, and the URL without any key
                status     integer NOT NULL,
                body       bytea NOT NULL,
                fetched_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL
            );
            CREATE INDEX upstream_answers_expires_at ON upstream_answers (expires_at);
            -- Items resolved from an upstream's records, by the record they came from (see ResolvedItems).
            CREATE TABLE resolved_items (
                experience  text NOT NULL,
                reference   text NOT NULL,         -- the upstream's record (a Rijksmuseum record number)
                item_id     text NOT NULL,         -- the item's id (an object number)
                item        jsonb NOT NULL,        -- a CatalogItem, detailed
                resolved_at timestamptz NOT NULL,
                PRIMARY KEY (experience, reference)
            );
            CREATE INDEX resolved_items_item ON resolved_items (experience, item_id);
            CREATE INDEX resolved_items_resolved_at ON resolved_items (resolved_at);
            -- Which replica is fetching what, so that replicas make one call between them (see FetchClaims).
            -- Unlogged: after a crash the claims are gone, which only means a record may be fetched twice.
            CREATE UNLOGGED TABLE fetch_claims (
                key           text PRIMARY KEY,
                claimed_until timestamptz NOT NULL
            );
            """),
        Migration(4, "datasets_and_minute_quotas", sql: """
            -- The catalogs the proxy serves from its own copy (mobiles, flash cards; see DatasetStore), one row per
            -- item in the upstream's order, with what lists search and sort by.
            CREATE TABLE dataset_items (
                experience  text NOT NULL,
                item_id     text NOT NULL,
                position    integer NOT NULL,          -- the upstream's order
                item        jsonb NOT NULL,            -- a CatalogItem, as a detail serves it
                search_text text NOT NULL,             -- lower case: what `q` is matched against
                price       double precision,
                rating      double precision,
                PRIMARY KEY (experience, item_id)
            );
            CREATE INDEX dataset_items_position ON dataset_items (experience, position);
            -- When each dataset was last loaded, and from where (a file, or the upstream).
            CREATE TABLE dataset_loads (
                experience text PRIMARY KEY,
                origin     text NOT NULL,
                item_count integer NOT NULL,
                loaded_at  timestamptz NOT NULL
            );
            -- Calls made to an upstream with a per-minute budget, by every replica together (see MinuteQuotaLedger).
            CREATE TABLE upstream_quota_minutes (
                upstream text NOT NULL,
                minute   timestamptz NOT NULL,
                used     integer NOT NULL CHECK (used >= 0),
                PRIMARY KEY (upstream, minute)
            );
            """),
        Migration(5, "rolling_call_windows", sql: """
            -- Calls counted over sliding windows by every replica together (see RollingCallLedger): an upstream's own
            -- windows, keyed by its name, and each user's share of an upstream's budgets, keyed by name and user.
            -- Rows older than the longest window (a day) are pruned now and then.
            CREATE TABLE upstream_calls (
                key       text NOT NULL,
                called_at timestamptz NOT NULL
            );
            CREATE INDEX upstream_calls_key_time ON upstream_calls (key, called_at);
            DROP TABLE upstream_quota_minutes;
            """),
        Migration(6, "kept_items", sql: """
            -- The last copy of every item an upstream sent, for every replica (see KeptItems): what a detail serves
            -- while its upstream fails, and for items resolved from an upstream's record, the one resolution all
            -- replicas share. It takes over the rows of the two tables that kept these apart.
            CREATE TABLE kept_items (
                experience text NOT NULL,
                item_id    text NOT NULL,
                item       jsonb NOT NULL,          -- a CatalogItem
                detailed   boolean NOT NULL,        -- from a detail or a resolution (more facts) than a search result
                reference  text,                    -- the upstream record it was resolved from, if it was
                kept_at    timestamptz NOT NULL,
                PRIMARY KEY (experience, item_id)
            );
            CREATE INDEX kept_items_reference ON kept_items (experience, reference) WHERE reference IS NOT NULL;
            CREATE INDEX kept_items_kept_at ON kept_items (kept_at);
            INSERT INTO kept_items (experience, item_id, item, detailed, kept_at)
                 SELECT experience, item_id, item, detailed, seen_at FROM seen_items;
            INSERT INTO kept_items (experience, item_id, item, detailed, reference, kept_at)
                 SELECT DISTINCT ON (experience, item_id) experience, item_id, item, true, reference, resolved_at
                   FROM resolved_items ORDER BY experience, item_id, resolved_at DESC
            ON CONFLICT (experience, item_id) DO UPDATE
                    SET item = excluded.item, detailed = true, reference = excluded.reference,
                        kept_at = excluded.kept_at;
            DROP TABLE seen_items;
            DROP TABLE resolved_items;
            """),
        Migration(7, "refresh_leases", sql: """
            -- Which replica runs a scheduled refresh (see RefreshLease): the one whose lease has not lapsed. A replica
            -- renews its lease while it works; when it stops or dies, another takes the lease once it has lapsed.
            CREATE TABLE refresh_leases (
                name       text PRIMARY KEY,       -- the refresh (bestsellers)
                holder     uuid NOT NULL,          -- the replica, a random id per process
                held_until timestamptz NOT NULL
            );
            """),
    ]
}
