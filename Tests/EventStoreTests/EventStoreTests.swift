import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// The event store on a real PostgreSQL: versions, idempotency, concurrency, immutability, erasure.
@Suite struct EventStoreTests {
    static let migrators = [Migrator(schema: "events_test", migrations: [
        Migration(1, "event_store", sql: EventStoreSchema.sql),
        Migration(2, "stream_lock", sql: EventStoreSchema.lockFunctionSQL),
        Migration(3, "lean_log", sql: EventStoreSchema.leanLogSQL),
        Migration(4, "gated_stream_lock", sql: EventStoreSchema.gatedLockSQL),
    ])]

    struct Favorited: Codable, Equatable { let itemID: String }

    static func event(_ item: String, id: UUID = UUID()) throws -> NewEvent {
        try NewEvent(id: id, type: "favorite-added", data: Favorited(itemID: item),
                     metadata: EventMetadata(requestID: "req-\(item)", actor: "user"))
    }

    static func withStore(_ body: (DatabasePool) async throws -> Void) async throws {
        try await withTestPool(migrators: migrators, size: 8, searchPath: "events_test") { pool, _ in
            try await body(pool)
        }
    }

    static func append(_ events: [NewEvent], to stream: String, expected: ExpectedVersion = .any,
                       pool: DatabasePool) async throws -> AppendResult {
        try await pool.withTransaction { connection in
            try await EventStore.append(events, to: stream, expected: expected, on: connection)
        }
    }

    @Test func appendsGetGaplessVersionsAndReadBackInOrder() async throws {
        try await Self.withStore { pool in
            let first = try await Self.append([Self.event("a"), Self.event("b")], to: "user-1", pool: pool)
            #expect(first == AppendResult(firstVersion: 1, lastVersion: 2, alreadyApplied: false))
            let second = try await Self.append([Self.event("c")], to: "user-1", expected: .exact(2), pool: pool)
            #expect(second.firstVersion == 3)
            let events = try await EventStore.read("user-1", pool: pool)
            #expect(events.map(\.version) == [1, 2, 3])
            #expect(try events.map { try $0.decode(Favorited.self).itemID } == ["a", "b", "c"])
            #expect(events[0].metadata == EventMetadata(requestID: "req-a", actor: "user"))
            #expect(try await EventStore.read("user-1", after: 2, pool: pool).map(\.version) == [3])
        }
    }

    @Test func metadataWithAnyTextIsStoredAsValidJSONAndReadsBack() async throws {
        try await Self.withStore { pool in
            let odd = EventMetadata(requestID: "quote \" backslash \\ tab \t control \u{1} é 😀 </script>",
                                    actor: nil, causationID: "line\nbreak")
            _ = try await Self.append([try NewEvent(id: UUID(), type: "favorite-added", data: Favorited(itemID: "x"),
                                                    metadata: odd)], to: "user-odd", pool: pool)
            let events = try await EventStore.read("user-odd", pool: pool)
            #expect(events.first?.metadata == odd)
            // PostgreSQL parsed it as JSON, with the keys as a JSON encoder writes them (sorted, none for nil).
            let keys = try await pool.query("""
                SELECT string_agg(k, ',') AS keys FROM events, json_object_keys(metadata) AS k WHERE stream_id = 'user-odd'
                """)
            #expect(try keys.single().decode(String.self, column: "keys") == "causationID,requestID")
        }
    }

    @Test func theExpectedVersionIsEnforced() async throws {
        try await Self.withStore { pool in
            _ = try await Self.append([Self.event("a")], to: "user-1", expected: .noStream, pool: pool)
            await #expect(throws: EventStoreError.wrongExpectedVersion(expected: .noStream, actual: 1)) {
                try await Self.append([Self.event("b")], to: "user-1", expected: .noStream, pool: pool)
            }
            await #expect(throws: EventStoreError.wrongExpectedVersion(expected: .exact(0), actual: 1)) {
                try await Self.append([Self.event("b")], to: "user-1", expected: .exact(0), pool: pool)
            }
            #expect(try await EventStore.read("user-1", pool: pool).count == 1)  // nothing written by the refusals
        }
    }

    /// A retry is checked before the version: the original result comes back, even with a stale expected version.
    @Test func aRetriedAppendIsAppliedOnce() async throws {
        try await Self.withStore { pool in
            let event = try Self.event("a")
            let original = try await Self.append([event], to: "user-1", expected: .exact(0), pool: pool)
            _ = try await Self.append([Self.event("b")], to: "user-1", pool: pool)
            let retried = try await Self.append([event], to: "user-1", expected: .exact(0), pool: pool)
            #expect(retried == AppendResult(firstVersion: original.firstVersion, lastVersion: original.lastVersion,
                                            alreadyApplied: true))
            #expect(try await EventStore.read("user-1", pool: pool).count == 2)
            await #expect(throws: EventStoreError.partialRetry) {
                try await Self.append([event, Self.event("c")], to: "user-1", pool: pool)
            }
        }
    }

    @Test func fiftyConcurrentAppendsToOneStreamGetVersionsOneToFifty() async throws {
        try await Self.withStore { pool in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask { _ = try await Self.append([Self.event("item-\(index)")], to: "busy", pool: pool) }
                }
                try await group.waitForAll()
            }
            let versions = try await EventStore.read("busy", pool: pool).map(\.version)
            #expect(versions == Array(1...50))
        }
    }

    /// A writer that checks the stream itself: the lock gives it the version, and one statement appends, advances
    /// the stream and runs the writer's own change, committing with it. Concurrent writers of one stream still get
    /// gapless versions, and each one's state, read under the lock, counts every writer before it.
    @Test func aWriterUnderTheLockAppendsWithItsOwnChangeInOneStatement() async throws {
        try await Self.withStore { pool in
            try await pool.query("CREATE TABLE side (version bigint PRIMARY KEY, seen bigint NOT NULL)")
            @Sendable func command(_ event: NewEvent) async throws {
                try await pool.withTransaction { connection in
                    let version = try await EventStore.lock("busy", on: connection)
                    let count = try await connection.query("SELECT count(*) FROM side").scalar(Int64.self)
                    let append = try EventStore.appending([event], to: "busy", after: version,
                                                          followedBy: "INSERT INTO side VALUES (\(version + 1), \(count))")
                    try await connection.commit(with: [append])
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<30 {
                    let event = try Self.event("item-\(index)")
                    group.addTask { try await command(event) }
                }
                try await group.waitForAll()
            }
            #expect(try await EventStore.read("busy", pool: pool).map(\.version) == Array(1...30))
            #expect(try await pool.withSession { try await EventStore.version(of: "busy", on: $0) } == 30)
            let rows = try await pool.query("SELECT version, seen FROM side ORDER BY version").rows
                .map { (try $0.decode(Int64.self, column: "version"), try $0.decode(Int64.self, column: "seen")) }
            #expect(rows.map(\.0) == Array(1...30))
            #expect(rows.allSatisfy { $0.1 == $0.0 - 1 })
        }
    }

    @Test func concurrentRetriesOfOneCommandWriteOneEvent() async throws {
        try await Self.withStore { pool in
            let event = try Self.event("same")
            let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
                for _ in 0..<10 { group.addTask { try await Self.append([event], to: "user-1", pool: pool) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(try await EventStore.read("user-1", pool: pool).count == 1)
            #expect(results.filter { !$0.alreadyApplied }.count == 1)
            #expect(Set(results.map(\.firstVersion)) == [1])
        }
    }

    /// An append holding one stream's lock does not delay another stream: the second append runs with a lock
    /// timeout, so waiting would make it fail rather than pass slowly.
    @Test func appendsToDifferentStreamsNeverWaitOnEachOther() async throws {
        try await Self.withStore { pool in
            _ = try await Self.append([Self.event("a")], to: "user-a", pool: pool)
            try await pool.withConnection { holder in
                try await holder.query("BEGIN")
                try await EventStore.lock("user-a", on: holder)
                let other = try await pool.withTransaction { connection in
                    try await connection.query("SET LOCAL lock_timeout = '2s'")
                    return try await EventStore.append([Self.event("b")], to: "user-b", expected: .any, on: connection)
                }
                #expect(other.firstVersion == 1)
                await #expect(throws: PostgresError.self) {
                    try await pool.withTransaction { connection in
                        try await connection.query("SET LOCAL lock_timeout = '200ms'")
                        return try await EventStore.append([Self.event("c")], to: "user-a", expected: .any, on: connection)
                    }
                }
                try await holder.query("ROLLBACK")
            }
        }
    }

    @Test func theLogRefusesUpdatesAndDeletes() async throws {
        try await Self.withStore { pool in
            _ = try await Self.append([Self.event("a")], to: "user-1", pool: pool)
            for statement: SQL in ["UPDATE events SET event_type = 'tampered'", "DELETE FROM events",
                                   "TRUNCATE events"] {
                await #expect(throws: PostgresError.self, "\(statement)") { try await pool.query(statement) }
            }
            #expect(try await EventStore.read("user-1", pool: pool).first?.type == "favorite-added")
        }
    }

    @Test func erasureIsTheOneDeletionAndIsAudited() async throws {
        try await Self.withStore { pool in
            _ = try await Self.append([Self.event("a"), Self.event("b")], to: "user-1", pool: pool)
            _ = try await Self.append([Self.event("c")], to: "user-2", pool: pool)
            let removed = try await pool.withTransaction { connection in
                try await EventStore.erase("user-1", reason: "account deleted", on: connection)
            }
            #expect(removed == 2)
            // Only the tombstone is left, after the erased versions; it names no data, just the reason.
            let left = try await EventStore.read("user-1", pool: pool)
            #expect(left.map(\.type) == [EventStore.streamErasedType])
            #expect(left.map(\.version) == [3])
            #expect(try left[0].decode(EventStore.Erased.self) == EventStore.Erased(reason: "account deleted"))
            #expect(try await EventStore.read("user-2", pool: pool).count == 1)
            let audit = try await pool.query("SELECT stream_id, events_removed, reason FROM event_erasures").single()
            #expect(try audit.decode(String.self, column: "stream_id") == "user-1")
            #expect(try audit.decode(Int.self, column: "events_removed") == 2)
            #expect(try audit.decode(String.self, column: "reason") == "account deleted")
            // Erasing again changes nothing and is not audited twice; erasing a stream that never existed neither.
            for stream in ["user-1", "never-existed"] {
                #expect(try await pool.withTransaction { try await EventStore.erase(stream, reason: "again", on: $0) } == 0)
            }
            #expect(try await pool.query("SELECT count(*) FROM event_erasures").scalar(Int.self) == 1)
            // The switch was for that transaction only.
            await #expect(throws: PostgresError.self) { try await pool.query("DELETE FROM events") }
        }
    }

    @Test func readAllFollowsGlobalPositions() async throws {
        try await Self.withStore { pool in
            _ = try await Self.append([Self.event("a")], to: "user-1", pool: pool)
            _ = try await Self.append([Self.event("b")], to: "user-2", pool: pool)
            let all = try await EventStore.readAll(after: 0, pool: pool)
            #expect(all.map(\.streamID) == ["user-1", "user-2"])
            #expect(try await EventStore.readAll(after: all[0].position, pool: pool).map(\.streamID) == ["user-2"])
        }
    }
}
