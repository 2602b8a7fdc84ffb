import Foundation
import Postgres
import TestSupport
import Testing

/// Values go in as bound parameters and come back through the decoders unchanged.
@Suite struct TypeRoundTripTests {
    struct Snapshot: Codable, Sendable, Equatable {
        let title: String
        let price: Double?
        let tags: [String]
    }

    @Test func scalarsRoundTrip() async throws {
        try await withTestPool { pool, _ in
            // setup
            let id = UUID()
            let date = Date(timeIntervalSince1970: 1_795_000_000.123456)
            // MUT
            let row = try await pool.query("""
                SELECT \(42)::int4 AS i4, \(Int64.max)::int8 AS i8, \(0.1 + 0.2)::float8 AS f8, \(true)::bool AS b,
                       \(id)::uuid AS u, \(date)::timestamptz AS t, \(Decimal(string: "12.50")!)::numeric AS n,
                       \(Int16(-7))::int2 AS i2, \(Double.infinity)::float8 AS inf
                """).single()
            // validate
            #expect(try row.decode(Int32.self, column: "i4") == 42)
            #expect(try row.decode(Int64.self, column: "i8") == Int64.max)
            #expect(try row.decode(Double.self, column: "f8") == 0.1 + 0.2)
            #expect(try row.decode(Bool.self, column: "b") == true)
            #expect(try row.decode(UUID.self, column: "u") == id)
            #expect(try row.decode(Date.self, column: "t") == date)
            #expect(try row.decode(Decimal.self, column: "n") == Decimal(string: "12.50")!)
            #expect(try row.decode(Int16.self, column: "i2") == -7)
            #expect(try row.decode(Double.self, column: "inf") == .infinity)
        }
    }

    @Test func uuidTextIsTheCanonicalLowercaseForm() async throws {
        try await withTestPool { pool, _ in
            let ids = [UUID(), UUID(), UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255))]
            for id in ids {
                #expect(id.lowercasedText == id.uuidString.lowercased())
                // What PostgreSQL prints for the value it read is the same text.
                let printed = try await pool.query("SELECT \(id)::uuid::text AS u").single()
                #expect(try printed.decode(String.self, column: "u") == id.lowercasedText)
            }
        }
    }

    @Test func textEdgeCasesRoundTrip() async throws {
        try await withTestPool { pool, _ in
            try await pool.query("CREATE TABLE texts (id int PRIMARY KEY, body text)")
            let samples = [
                "", "plain", "Zoë 🫶 ΑΒΓ 漢字 عربى", "line\nbreak\ttab", "quote ' double \" backslash \\",
                String(repeating: "long text ", count: 100_000),
            ]
            for (index, sample) in samples.enumerated() {
                try await pool.query("INSERT INTO texts VALUES (\(index), \(sample))")
            }
            let stored = try await pool.query("SELECT body FROM texts ORDER BY id").values(String.self)
            #expect(stored == samples)
        }
    }

    @Test func nullsDecodeAsOptionals() async throws {
        try await withTestPool { pool, _ in
            let missing: String? = nil
            let row = try await pool.query("SELECT \(missing)::text AS a, \(Optional("x"))::text AS b").single()
            #expect(try row.decode(String?.self, column: "a") == nil)
            #expect(try row.decode(String?.self, column: "b") == "x")
            let error = #expect(throws: PostgresDecodingError.self) { try row.decode(String.self, column: "a") }
            #expect(error?.column == "a")
            #expect(error?.isNull == true)
        }
    }

    @Test func byteaRoundTripsEveryByteValue() async throws {
        try await withTestPool { pool, _ in
            let small = Data((0...255).map(UInt8.init))
            let large = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let row = try await pool.query("""
                SELECT \(small)::bytea AS small, \(large)::bytea AS large, length(\(large)::bytea) AS length
                """).single()
            #expect(try row.decode(Data.self, column: "small") == small)
            #expect(try row.decode(Data.self, column: "large") == large)
            #expect(try row.decode(Int.self, column: "length") == 1_000_000)
        }
    }

    @Test func jsonbRoundTripsCodableValues() async throws {
        try await withTestPool { pool, _ in
            try await pool.query("CREATE TABLE docs (id int PRIMARY KEY, body jsonb NOT NULL)")
            let snapshot = Snapshot(title: "Nachtwacht \"de\" 🎨", price: 12.5, tags: ["a", "b/c"])
            try await pool.query("INSERT INTO docs VALUES (1, \(PostgresJSON(snapshot))::jsonb)")
            let row = try await pool.query("SELECT body, body->>'title' AS title FROM docs").single()
            #expect(try row.decode(PostgresJSON<Snapshot>.self, column: "body").value == snapshot)
            #expect(try row.decode(String.self, column: "title") == snapshot.title)
        }
    }

    @Test func decodingMismatchNamesTheColumn() async throws {
        try await withTestPool { pool, _ in
            let row = try await pool.query("SELECT 'not-a-uuid'::text AS item_id, 1 AS n").single()
            let error = #expect(throws: PostgresDecodingError.self) { try row.decode(Int.self, column: "item_id") }
            #expect(error?.column == "item_id")
            #expect(error?.description.contains("item_id") == true)
            #expect(error?.description.contains("not-a-uuid") == false)
            let uuidError = #expect(throws: PostgresDecodingError.self) { try row.decode(UUID.self, column: "item_id") }
            #expect(uuidError?.typeName == "UUID")
        }
    }

    /// Rows are read by name: a name the result lacks or holds twice, or a one-value read of a wider row, is an
    /// error that says so, never another column's value.
    @Test func columnsAreFoundByNameOnly() async throws {
        try await withTestPool { pool, _ in
            let row = try await pool.query("SELECT 1 AS a, 2 AS b, 3 AS a").single()
            #expect(try row.decode(Int.self, column: "b") == 2)
            let missing = #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "c") }
            #expect(missing?.description.contains("no column named c") == true)
            let repeated = #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "a") }
            #expect(repeated?.description.contains("more than one column is named a") == true)
            let wide = #expect(throws: PostgresError.self) { try row.value(Int.self) }
            #expect(wide?.description.contains("expected exactly one column, got 3") == true)
            let list = try await pool.query("SELECT g AS n FROM generate_series(1, 3) g")
            #expect(try list.decode(Int.self, column: "n") == [1, 2, 3])
            #expect(try list.values(Int.self) == [1, 2, 3])
            #expect(throws: PostgresError.self) { try list.scalar(Int.self) }
        }
    }

    @Test func timestampsKeepMicrosecondsAndDecodeServerText() async throws {
        try await withTestPool { pool, _ in
            let row = try await pool.query("""
                SELECT '2026-11-22 17:08:00.5+00'::timestamptz AS half,
                       '1999-12-31 23:59:59+00'::timestamptz AS millennium,
                       'infinity'::timestamptz AS infinite, '0044-03-15 12:00:00+00 BC'::timestamptz AS ides
                """).single()
            #expect(try row.decode(Date.self, column: "half") == Date(timeIntervalSince1970: 1_795_367_280.5))
            #expect(try row.decode(Date.self, column: "millennium") == Date(timeIntervalSince1970: 946_684_799))
            #expect(try row.decode(Date.self, column: "infinite") == .distantFuture)
            #expect(try row.decode(Date.self, column: "ides") < Date(timeIntervalSince1970: -62_000_000_000))
        }
    }

    @Test func datesOutsideTheRangeAreRefusedByTheServerNotTrapped() async throws {
        try await withTestPool { pool, _ in
            let both = try await pool.query("""
                SELECT \(Date(timeIntervalSince1970: .infinity))::timestamptz = 'infinity'
                   AND \(Date(timeIntervalSince1970: -.infinity))::timestamptz = '-infinity'
                """).scalar(Bool.self)
            #expect(both)
            for seconds in [Double.nan, 1e300, -1e300] {
                let error = await #expect(throws: PostgresError.self) {
                    try await pool.query("SELECT \(Date(timeIntervalSince1970: seconds))::timestamptz")
                }
                #expect(error?.sqlState == "22007")
            }
            // The sessions stay usable.
            #expect(try await pool.query("SELECT 1").scalar(Int.self) == 1)
        }
    }
}
