import Postgres

/// The tables of an event store, for a service to include in its own migrations (in its own schema):
///
///     Migration(1, "event_store", sql: EventStoreSchema.sql),
///     Migration(2, "projections", sql: EventStoreSchema.projectionsSQL),
///     Migration(3, "stream_lock", sql: EventStoreSchema.lockFunctionSQL),
///     Migration(4, "lean_log", sql: EventStoreSchema.leanLogSQL),
///     Migration(5, "gated_stream_lock", sql: EventStoreSchema.gatedLockSQL),
public enum EventStoreSchema {
    public static let sql: StaticString = """
        -- One row per stream (one stream per user): its current version, and the row an append locks, so appends to
        -- one stream queue while appends to different streams never wait on each other.
        CREATE TABLE event_streams (
            stream_id  text PRIMARY KEY,
            version    bigint NOT NULL CHECK (version >= 0)
        );

        -- The log. Append-only: the trigger below refuses UPDATE and DELETE to every role, owner included.
        CREATE TABLE events (
            position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            stream_id       text NOT NULL,
            version         bigint NOT NULL CHECK (version >= 1),
            event_id        uuid NOT NULL CONSTRAINT events_event_id_key UNIQUE,
            event_type      text NOT NULL,
            schema_version  integer NOT NULL CHECK (schema_version >= 1),
            data            jsonb NOT NULL,
            metadata        jsonb NOT NULL,
            recorded_at     timestamptz NOT NULL DEFAULT now(),
            -- The writing transaction: async projections read behind the oldest running one (no gap is skipped).
            transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
            CONSTRAINT events_stream_version_key UNIQUE (stream_id, version)
        );
        CREATE INDEX events_by_transaction ON events (transaction_id, position);

        -- Every erasure (the one way events are ever deleted), kept after the events are gone.
        CREATE TABLE event_erasures (
            stream_id       text NOT NULL,
            erased_at       timestamptz NOT NULL DEFAULT now(),
            events_removed  bigint NOT NULL,
            reason          text NOT NULL
        );

        CREATE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' AND current_setting('event_store.erasure', true) = 'on' THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION 'events are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
        END;
        $$;
        CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
            FOR EACH ROW EXECUTE FUNCTION events_are_immutable();
        CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
            FOR EACH STATEMENT EXECUTE FUNCTION events_are_immutable();
        REVOKE UPDATE, DELETE, TRUNCATE ON events FROM PUBLIC;
        """

    /// The function every writer of a stream takes its lock with (see ``EventStore/lock(_:on:)``): an advisory lock
    /// on the stream's name in a class of its own ('EVTS'), so it never meets another lock of the database, held
    /// until the transaction ends. Returns the stream's version, read once the lock is held.
    public static let lockFunctionSQL: StaticString = """
        CREATE FUNCTION lock_event_stream(stream text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            current bigint;
        BEGIN
            PERFORM pg_advisory_xact_lock(1163285587, hashtext(stream));
            SELECT version INTO current FROM event_streams WHERE stream_id = stream;
            RETURN coalesce(current, 0);
        END;
        $$;
        """

    /// The log without what an append need not pay for (2026-12, issue #50). A stream's version is the highest version
    /// in its log: the (stream_id, version) key finds it in one probe, and under the stream's lock nobody else
    /// appends, so the row per stream, rewritten by every append and never HOT, goes. An erasure appends its tombstone
    /// at the version the stream had (``EventStore/erase(_:reason:on:)``), so a version is never handed out twice.
    /// `position` keeps its order (events_by_transaction) but no query looks an event up by it: its key goes. Each
    /// append computes its version and names its schema version itself: the checks go. Payloads are kept as their
    /// writer sent them, as `json` (checked to be JSON, never parsed into a tree and printed again).
    public static let leanLogSQL: StaticString = """
        CREATE OR REPLACE FUNCTION lock_event_stream(stream text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(1163285587, hashtext(stream));
            -- A statement of its own, so a snapshot of its own: it sees every append that held the lock before.
            RETURN coalesce((SELECT max(version) FROM events WHERE stream_id = stream), 0);
        END;
        $$;
        DROP TABLE event_streams;
        ALTER TABLE events DROP CONSTRAINT events_pkey;
        ALTER TABLE events DROP CONSTRAINT events_version_check, DROP CONSTRAINT events_schema_version_check;
        ALTER TABLE events ALTER COLUMN data TYPE json USING data::json,
                           ALTER COLUMN metadata TYPE json USING metadata::json;
        """

    /// The stream lock behind the switch-over gate (``EventStore/switchOverGate``, taken shared), as
    /// ``EventStore/locking(_:)`` takes it: a writer that locks its stream with the function (an append, an erasure,
    /// a view's repair) then holds no table while a rebuild switches over, and the two cannot deadlock. A migration's
    /// text never changes, so the keys are literals: the switch-over test deadlocks if they part from EventStore's.
    public static let gatedLockSQL: StaticString = """
        CREATE OR REPLACE FUNCTION lock_event_stream(stream text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(1398230870, 0);
            PERFORM pg_advisory_xact_lock(1163285587, hashtext(stream));
            -- A statement of its own, so a snapshot of its own: it sees every append that held the lock before.
            RETURN coalesce((SELECT max(version) FROM events WHERE stream_id = stream), 0);
        END;
        $$;
        """

    /// Where each async projection has read the log up to, written in the same transaction as the rows it produced.
    public static let projectionsSQL: StaticString = """
        CREATE TABLE projection_checkpoints (
            projection      text PRIMARY KEY,
            transaction_id  xid8 NOT NULL,
            position        bigint NOT NULL,
            updated_at      timestamptz NOT NULL DEFAULT now()
        );
        """
}
