import Foundation
import Postgres

/// An event to append. Its `id` makes the append idempotent: appending an id that is already in the stream is a
/// success that returns the original result, never a second event.
public struct NewEvent: Sendable {
    public var id: UUID
    public var type: String
    public var schemaVersion: Int
    /// JSON text.
    public var data: String
    public var metadata: EventMetadata
    /// When it happened; `nil` takes the transaction's time. A writer that puts the same time in an inline view
    /// passes it here, so that a rebuilt view equals the live one to the microsecond.
    public var recordedAt: Date?

    public init<Payload: Encodable>(id: UUID, type: String, schemaVersion: Int = 1, data: Payload,
                                    metadata: EventMetadata, recordedAt: Date? = nil) throws {
        self.id = id
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = String(decoding: try EventStore.encoder.encode(data), as: UTF8.self)
        self.metadata = metadata
        self.recordedAt = recordedAt
    }
}

/// Who and what caused an event.
public struct EventMetadata: Codable, Sendable, Equatable {
    public var requestID: String?
    /// The user or system that acted.
    public var actor: String?
    /// The event or command this one follows from.
    public var causationID: String?

    public init(requestID: String? = nil, actor: String? = nil, causationID: String? = nil) {
        self.requestID = requestID
        self.actor = actor
        self.causationID = causationID
    }
}

extension EventMetadata: PostgresEncodable {
    /// The metadata as JSON, keys sorted and absent ones left out, as ``PostgresJSON`` writes it, without a
    /// `JSONEncoder`: every write binds one, and the encoder's generic machinery was a visible share of a write's CPU.
    public var postgresText: String {
        var text = "{"
        for (key, value) in [("actor", actor), ("causationID", causationID), ("requestID", requestID)] {
            guard let value else { continue }
            if text.utf8.count > 1 { text += "," }
            text += "\"" + key + "\":" + Self.quoted(value)
        }
        return text + "}"
    }

    /// `value` as a JSON string: quotes and backslashes escaped, control characters as `\u00XX`.
    static func quoted(_ value: String) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(value.utf8.count + 2)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes += [UInt8(ascii: "\\"), byte]
            case ..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// An event as stored.
public struct RecordedEvent: Sendable, Equatable {
    public var position: Int64
    public var streamID: String
    public var version: Int64
    public var id: UUID
    public var type: String
    public var schemaVersion: Int
    /// JSON text.
    public var data: String
    public var metadata: EventMetadata
    public var recordedAt: Date
    /// The writing transaction (`xid8`): with `position`, the order in which projections read the log.
    public var transactionID: Int64

    public func decode<Payload: Decodable>(_ type: Payload.Type) throws -> Payload {
        try JSONDecoder().decode(type, from: Data(data.utf8))
    }
}

/// What the writer believes the stream's version is.
public enum ExpectedVersion: Sendable, Equatable {
    /// Append whatever the version.
    case any
    /// The stream must not exist yet.
    case noStream
    /// The stream must be at exactly this version (0: exists with no events, or does not exist).
    case exact(Int64)
}

public struct AppendResult: Sendable, Equatable {
    public var firstVersion: Int64
    public var lastVersion: Int64
    /// The events were already in the stream (a retried command): nothing was written this time.
    public var alreadyApplied: Bool

    public init(firstVersion: Int64, lastVersion: Int64, alreadyApplied: Bool) {
        self.firstVersion = firstVersion
        self.lastVersion = lastVersion
        self.alreadyApplied = alreadyApplied
    }
}

public enum EventStoreError: Error, Equatable, CustomStringConvertible {
    /// The stream is not at the expected version: someone else wrote first.
    case wrongExpectedVersion(expected: ExpectedVersion, actual: Int64)
    /// A retry carried some event ids already appended and some new ones: not the same command.
    case partialRetry
    case emptyAppend

    public var description: String {
        switch self {
        case .wrongExpectedVersion(let expected, let actual): "expected version \(expected), stream is at \(actual)"
        case .partialRetry: "some of these event ids are already in the stream and some are not"
        case .emptyAppend: "an append needs at least one event"
        }
    }
}

/// The event store's operations, on a connection inside the caller's transaction: the caller decides what else
/// commits with the append (a per-user view updated inline, a checkpoint).
public enum EventStore {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// Appends `events` to `stream`. Order inside the transaction: lock the stream (appends to one stream queue
    /// here; other streams are untouched), then idempotency (already appended ids return the original result, before
    /// any version check), then the expected version, then the insert.
    @discardableResult
    public static func append(
        _ events: [NewEvent], to stream: String, expected: ExpectedVersion, on connection: isolated PostgresConnection
    ) async throws -> AppendResult {
        guard !events.isEmpty else { throw EventStoreError.emptyAppend }
        let current = try await lock(stream, on: connection)
        var existing: [Int64] = []
        for event in events {
            if let version = try await version(of: event.id, in: stream, on: connection) { existing.append(version) }
        }
        if existing.count == events.count, let low = existing.min(), let high = existing.max() {
            return AppendResult(firstVersion: low, lastVersion: high, alreadyApplied: true)
        }
        guard existing.isEmpty else { throw EventStoreError.partialRetry }

        switch expected {
        case .any: break
        case .noStream where current == 0: break
        case .exact(let version) where version == current: break
        default: throw EventStoreError.wrongExpectedVersion(expected: expected, actual: current)
        }
        try await connection.query(try appending(events, to: stream, after: current), prepare: true)
        return AppendResult(firstVersion: current + 1, lastVersion: current + Int64(events.count),
                            alreadyApplied: false)
    }

    /// One statement that appends `events` to `stream`, whose version is `version` under the caller's lock (see
    /// ``lock(_:on:)``); then runs `followedBy`, the caller's own change for the same
    /// statement (an inline view's row), if any. For a writer that checked the stream's state itself: the event ids
    /// must not be in the stream yet.
    public static func appending(_ events: [NewEvent], to stream: String, after version: Int64,
                                 followedBy change: SQL? = nil) throws -> SQL {
        var rows: SQL = ""
        for (offset, event) in events.enumerated() {
            rows = """
                \(fragment: rows)\(raw: offset == 0 ? "" : ", ")(\(stream), \(version + 1 + Int64(offset)), \(event.id),
                \(event.type), \(event.schemaVersion), \(event.data)::json, \(event.metadata)::json,
                COALESCE(\(event.recordedAt)::timestamptz, now()))
                """
        }
        return """
            WITH appended AS (
                INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata,
                                    recorded_at)
                VALUES \(fragment: rows)
            )
            \(fragment: change ?? "SELECT")
            """
    }

    /// The statement that takes `stream`'s lock until the transaction ends, for a writer that sends it in one
    /// pipeline with its own statement (which reads the stream's version itself, once the lock is held): see
    /// ``lock(_:on:)`` for why it comes before the transaction's first write. It first takes ``switchOverGate``
    /// shared.
    public static func locking(_ stream: String) -> SQL {
        """
        WITH gate AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(\(raw: switchOverGate), 0))
        SELECT pg_advisory_xact_lock(1163285587, hashtext(\(stream)::text)) FROM gate
        """
    }

    /// ``locking(_:)`` for several streams at once (no name may hold a comma), taken in the order of their lock keys:
    /// two transactions that each lock several streams this way never wait for each other in a circle. (PostgreSQL
    /// calls a volatile function of the select list after sorting, so the locks follow the order; the gate, a
    /// materialized CTE read below the sort, comes before them all.)
    public static func locking(_ streams: [String]) -> SQL {
        guard streams.count > 1 else { return locking(streams.first ?? "") }
        return """
        WITH gate AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(\(raw: switchOverGate), 0))
        SELECT pg_advisory_xact_lock(1163285587, key)
          FROM (SELECT DISTINCT hashtext(stream) AS key
                  FROM gate, unnest(string_to_array(\(streams.joined(separator: ","))::text, ',')) AS stream) AS keys
         ORDER BY key
        """
    }

    /// The advisory lock (this class, key 0) that every ``locking(_:)`` takes shared before any stream's lock, and a
    /// rebuild's switch-over takes alone, before it locks an inline view and the log. Once the switch-over holds it,
    /// no such writer holds a lock on either table or waits for one, whatever order its statement would take them in
    /// (PostgreSQL does not promise one), so the two cannot deadlock.
    public static let switchOverGate: StaticString = "1398230870"  // "SWOV"

    /// Locks the stream until the transaction ends and returns its version: a command can then check the stream's
    /// state and append without anyone writing in between. Taking it again in the same transaction costs nothing.
    ///
    /// It must come before the transaction's first write. The lock is an advisory lock on the stream's name, so the
    /// transaction gets its id (`xid8`) only after it holds the lock: within one stream, transaction ids then follow
    /// version order, and a projection reading in (transaction id, position) order sees each user's events in order.
    /// (A row lock would hand out the id before waiting, and two writers could commit in the opposite order.) A
    /// writer that reads its state in the same statement calls `lock_event_stream` (``EventStoreSchema/lockFunctionSQL``)
    /// from a SQL function of its own.
    @discardableResult
    public static func lock(_ stream: String, on connection: isolated PostgresConnection) async throws -> Int64 {
        try await connection.query("SELECT lock_event_stream(\(stream))", prepare: true).scalar(Int64.self)
    }

    /// The version at which event `id` was appended to `stream`, if it was.
    public static func version(of id: UUID, in stream: String, on connection: isolated PostgresConnection) async throws
        -> Int64?
    {
        try await connection.query("SELECT version FROM events WHERE event_id = \(id) AND stream_id = \(stream)",
                                   prepare: true).rows.first?.value(Int64.self)
    }

    /// The stream's current version (0 when it has no events).
    public static func version(of stream: String, on connection: isolated PostgresConnection) async throws -> Int64 {
        try await connection.query(versionStatement(of: stream), prepare: true).scalar(Int64.self)
    }

    /// What ``version(of:on:)`` sends, for a caller that pipelines it with statements of its own.
    public static func versionStatement(of stream: String) -> SQL {
        "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = \(stream)"
    }

    /// The stream's events with a version above `version`, oldest first.
    public static func read(_ stream: String, after version: Int64 = 0, limit: Int = 1000,
                            on connection: isolated PostgresConnection) async throws -> [RecordedEvent] {
        try await connection.query("""
            SELECT \(raw: recordedColumns)
              FROM events WHERE stream_id = \(stream) AND version > \(version)
             ORDER BY version LIMIT \(limit)
            """, prepare: true).rows.map(recorded)
    }

    /// The stream's events with a version above `version`, oldest first.
    public static func read(_ stream: String, after version: Int64 = 0, limit: Int = 1000,
                            pool: DatabasePool) async throws -> [RecordedEvent] {
        try await pool.withSession { connection in
            try await read(stream, after: version, limit: limit, on: connection)
        }
    }

    /// Events of every stream after global position `position`, oldest first. Positions are assigned when a
    /// transaction inserts, not when it commits, so a reader following the log live must stay behind the oldest
    /// running transaction (as projections do); this plain read is for catch-up of a quiet log, and for tests.
    public static func readAll(after position: Int64, limit: Int = 1000, pool: DatabasePool) async throws
        -> [RecordedEvent]
    {
        try await pool.query("""
            SELECT \(raw: recordedColumns)
              FROM events WHERE position > \(position) ORDER BY position LIMIT \(limit)
            """).rows.map(recorded)
    }

    /// The type of the tombstone an erasure leaves: projections see it and forget the stream's owner.
    public static let streamErasedType = "stream-erased"

    /// Deletes every event of `stream` (account erasure), the one deletion the log allows, recorded with `reason`,
    /// and appends a ``streamErasedType`` event in their place (it carries nothing but the reason), so that async
    /// projections, which may have counted the deleted events, learn to drop them. Erasing again deletes nothing and
    /// records nothing. Returns how many events went.
    @discardableResult
    public static func erase(_ stream: String, reason: String, on connection: isolated PostgresConnection) async throws
        -> Int
    {
        let version = try await lock(stream, on: connection)  // an append in flight finishes first
        try await connection.query("SELECT set_config('event_store.erasure', 'on', true)")  // this transaction only
        let removed = try await connection.query("""
            DELETE FROM events WHERE stream_id = \(stream) AND event_type <> \(streamErasedType)
            """).affectedRows
        try await connection.query("SELECT set_config('event_store.erasure', 'off', true)")
        if removed > 0 {
            try await connection.query("""
                INSERT INTO event_erasures (stream_id, events_removed, reason) VALUES (\(stream), \(removed), \(reason))
                """)
            let tombstone = try NewEvent(id: UUID(), type: streamErasedType, data: Erased(reason: reason),
                                         metadata: EventMetadata(actor: "system"))
            // At the version the stream had: read again now, the log would give a version handed out before.
            try await connection.query(try appending([tombstone], to: stream, after: version))
        }
        return removed
    }

    /// The payload of a ``streamErasedType`` event.
    public struct Erased: Codable, Sendable, Equatable {
        public var reason: String

        public init(reason: String) { self.reason = reason }
    }

    /// The columns of `events` that ``recorded(_:)`` reads. The transaction id goes out as text (it is 64-bit
    /// unsigned) under another name: `ORDER BY transaction_id` would otherwise sort by the text column of that name,
    /// and "1000" would come before "999".
    static let recordedColumns: StaticString = """
        position, stream_id, version, event_id, event_type, schema_version, data::text AS data,
        metadata::text AS metadata, recorded_at, transaction_id::text AS transaction_text
        """

    static func recorded(_ row: PostgresRow) throws -> RecordedEvent {
        let metadata = try row.decode(String.self, column: "metadata")
        return RecordedEvent(
            position: try row.decode(Int64.self, column: "position"),
            streamID: try row.decode(String.self, column: "stream_id"),
            version: try row.decode(Int64.self, column: "version"), id: try row.decode(UUID.self, column: "event_id"),
            type: try row.decode(String.self, column: "event_type"),
            schemaVersion: try row.decode(Int.self, column: "schema_version"),
            data: try row.decode(String.self, column: "data"),
            metadata: try JSONDecoder().decode(EventMetadata.self, from: Data(metadata.utf8)),
            recordedAt: try row.decode(Date.self, column: "recorded_at"),
            transactionID: try row.decode(Int64.self, column: "transaction_text")
        )
    }
}
