import Postgres

/// The auth schema's migrations: numbered from 1, append-only, never edited once released (the migrator refuses an
/// edited one). Each runs in the schema, in one transaction with the others pending.
enum AuthMigrations {
    static let all: [Migration] = [
        Migration(1, "accounts_sessions_keys_throttle", sql: """
            -- Emails are stored normalized (trimmed, NFC, lower case), so plain uniqueness is case-insensitive.
            CREATE TABLE users (
                id                  uuid PRIMARY KEY,
                email               text NOT NULL CONSTRAINT users_email_key UNIQUE,
                password_hash       text NOT NULL,
                experience          text NOT NULL,
                preferences         jsonb NOT NULL DEFAULT '{}',
                created_at          timestamptz NOT NULL,
                updated_at          timestamptz NOT NULL,
                password_changed_at timestamptz NOT NULL
            );

            -- One row per sign-in. The refresh token itself is never stored: refresh_tokens keeps SHA-256 digests.
            CREATE TABLE sessions (
                id                  uuid PRIMARY KEY,
                user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                generation          integer NOT NULL,      -- rotations so far; the live token has this generation
                rotation_nonce      bytea,                 -- derives the live token from the previous one (grace replay)
                rotated_at          timestamptz,
                device_name         text,
                user_agent          text,
                client_address      text,
                created_at          timestamptz NOT NULL,
                last_used_at        timestamptz NOT NULL,
                idle_expires_at     timestamptz NOT NULL,
                absolute_expires_at timestamptz NOT NULL,
                ended_at            timestamptz,
                end_reason          text
            );
            CREATE INDEX sessions_active_by_user ON sessions (user_id) WHERE ended_at IS NULL;
            CREATE INDEX sessions_by_absolute_expiry ON sessions (absolute_expires_at);

            -- Every refresh token ever issued for a live session, so presenting a retired one is recognised as reuse.
            CREATE TABLE refresh_tokens (
                digest      bytea PRIMARY KEY,
                session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                generation  integer NOT NULL,
                issued_at   timestamptz NOT NULL,
                UNIQUE (session_id, generation)
            );

            -- Sessions that ended while access tokens issued for them may still be unexpired: every service refuses
            -- those tokens. No foreign key: the list must outlive a deleted account.
            CREATE TABLE revoked_sessions (
                session_id  uuid PRIMARY KEY,
                revoked_at  timestamptz NOT NULL
            );
            CREATE INDEX revoked_sessions_by_time ON revoked_sessions (revoked_at);

            -- Ed25519 signing keys shared by every replica. A new key is published before it signs.
            CREATE TABLE signing_keys (
                kid          text PRIMARY KEY,
                private_key  bytea NOT NULL,
                public_key   bytea NOT NULL,
                created_at   timestamptz NOT NULL,
                signs_from   timestamptz NOT NULL
            );

            -- Failed sign-ins per account (keyed by a digest of the email) and per client address.
            CREATE TABLE sign_in_throttle (
                key                text PRIMARY KEY,
                failures           integer NOT NULL,
                window_started_at  timestamptz NOT NULL,
                blocked_until      timestamptz
            );
            """),
        Migration(2, "account_deletions", sql: """
            -- The outbox of account deletions, written in the deleting transaction: other services read it and erase
            -- the user's data there, so a crash between the two can never leave that data behind.
            CREATE TABLE account_deletions (
                user_id     uuid PRIMARY KEY,
                deleted_at  timestamptz NOT NULL
            );
            CREATE INDEX account_deletions_by_time ON account_deletions (deleted_at);
            """),
        Migration(3, "idempotency_keys", sql: """
            -- The Idempotency-Key of the sign-up that created the account and of the last password change (SHA-256
            -- of the request's scope and the key): how a retry whose first answer was lost is recognised.
            ALTER TABLE users ADD COLUMN signup_key bytea, ADD COLUMN password_change_key bytea;
            """),
        Migration(4, "known_devices", sql: """
            -- Devices that signed in to an account before, by a digest of the device credential each was given: their
            -- sign-ins are throttled per device, never with strangers who share their address (OWASP's device
            -- cookies). Gone with the account.
            CREATE TABLE known_devices (
                credential_digest  bytea PRIMARY KEY,
                user_id            uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                issued_at          timestamptz NOT NULL
            );
            CREATE INDEX known_devices_by_user ON known_devices (user_id, issued_at);
            """),
        Migration(5, "account_recovery_mail", sql: """
            -- When the owner of the email first followed a mailed link (verification or password reset).
            ALTER TABLE users ADD COLUMN email_verified_at timestamptz;

            -- The live token of each account's last mailed link per purpose: a SHA-256 digest only, one row per account
            -- and purpose, so each new link replaces the one before it and a used link is deleted.
            CREATE TABLE link_tokens (
                user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                purpose     text NOT NULL CHECK (purpose IN ('password-reset', 'email-verification')),
                digest      bytea NOT NULL,
                issued_at   timestamptz NOT NULL,
                expires_at  timestamptz NOT NULL,
                PRIMARY KEY (user_id, purpose)
            );

            -- Mails asked for and not yet delivered. A request writes its row in the transaction that asks for it (a
            -- sign-up, a reset request) whether or not the address has an account; the sender resolves the account,
            -- mints the link's token and delivers, so no token is stored in clear text and a mail server outage only
            -- delays mail.
            CREATE TABLE mail_outbox (
                id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                purpose          text NOT NULL CHECK (purpose IN ('password-reset', 'email-verification')),
                email            text NOT NULL,
                requested_at     timestamptz NOT NULL,
                attempts         integer NOT NULL DEFAULT 0,
                next_attempt_at  timestamptz NOT NULL,
                last_error       text
            );
            CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at);
            """),
        Migration(6, "refresh_retry_key", sql: """
            -- A digest of the Idempotency-Key of the refresh that made the live generation (SHA-256 of the session and
            -- the key; null when it had none): a retry of that refresh with the same key, by an app whose answer was
            -- lost while it was suspended, gets the same successor instead of counting as reuse.
            ALTER TABLE sessions ADD COLUMN rotation_key bytea;
            """),
        Migration(7, "display_name", sql: """
            -- The name the user goes by in the apps; NULL until they give one.
            ALTER TABLE users ADD COLUMN display_name text;
            """),
        Migration(8, "profile_changes", sql: """
            -- Each profile change (experience, preferences, display name) counts up `profile_version` and stamps
            -- `profile_changed_at` (the database's clock), for the feed favorites-service polls to tell the user's
            -- other devices (GET /v1/auth/profile-changes).
            ALTER TABLE users ADD COLUMN profile_version bigint NOT NULL DEFAULT 0;
            ALTER TABLE users ADD COLUMN profile_changed_at timestamptz;
            CREATE INDEX users_profile_changed_at ON users (profile_changed_at) WHERE profile_changed_at IS NOT NULL;
            """),
    ]
}
