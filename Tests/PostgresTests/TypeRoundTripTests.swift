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
            let stored = try await pool.query("SELECT body FROM texts ORDER BY id").decode(column: 0, as: String.self)
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
            let row = try await pool.query("SELECT \(small)::bytea, \(large)::bytea, length(\(large)::bytea)").single()
            let (decodedSmall, decodedLarge, length) = try row.decode((Data, Data, Int).self)
            #expect(decodedSmall == small)
            #expect(decodedLarge == large)
            #expect(length == 1_000_000)
        }
    }

    @Test func jsonbRoundTripsCodableValues() async throws {
        try await withTestPool { pool, _ in
            try await pool.query("CREATE TABLE docs (id int PRIMARY KEY, body jsonb NOT NULL)")
            let snapshot = Snapshot(title: "Nachtwacht \"de\" 🎨", price: 12.5, tags: ["a", "b/c"])
            try await pool.query("INSERT INTO docs VALUES (1, \(PostgresJSON(snapshot))::jsonb)")
            let row = try await pool.query("SELECT body, body->>'title' FROM docs").single()
            #expect(try row.decode(PostgresJSON<Snapshot>.self, at: 0).value == snapshot)
            #expect(try row.decode(String.self, at: 1) == snapshot.title)
        }
    }

    @Test func decodingMismatchNamesTheColumn() async throws {
        try await withTestPool { pool, _ in
            let row = try await pool.query("SELECT 'not-a-uuid'::text AS item_id, 1 AS n").single()
            let error = #expect(throws: PostgresDecodingError.self) { try row.decode((Int, UUID).self) }
            // The tuple's first type (Int) fails on the first column, which is named.
            #expect(error?.column == "item_id")
            #expect(error?.description.contains("item_id") == true)
            #expect(error?.description.contains("not-a-uuid") == false)
            let uuidError = #expect(throws: PostgresDecodingError.self) { try row.decode(UUID.self, column: "item_id") }
            #expect(uuidError?.typeName == "UUID")
        }
    }

    @Test func timestampsKeepMicrosecondsAndDecodeServerText() async throws {
        try await withTestPool { pool, _ in
            let row = try await pool.query("""
                SELECT '2026-11-22 17:08:00.5+00'::timestamptz, '1999-12-31 23:59:59+00'::timestamptz,
                       'infinity'::timestamptz, '0044-03-15 12:00:00+00 BC'::timestamptz
                """).single()
            let (half, millennium, infinite, ides) = try row.decode((Date, Date, Date, Date).self)
            #expect(half == Date(timeIntervalSince1970: 1_795_367_280.5))
            #expect(millennium == Date(timeIntervalSince1970: 946_684_799))
            #expect(infinite == .distantFuture)
            #expect(ides < Date(timeIntervalSince1970: -62_000_000_000))
        }
    }

    @Test func datesOutsideTheRangeAreRefusedByTheServerNotTrapped() async throws {
        try await withTestPool { pool, _ in
            let (future, past) = try await pool.query("""
                SELECT \(Date(timeIntervalSince1970: .infinity))::timestamptz = 'infinity',
                       \(Date(timeIntervalSince1970: -.infinity))::timestamptz = '-infinity'
                """).single().decode((Bool, Bool).self)
            #expect(future && past)
            for seconds in [Double.nan, 1e300, -1e300] {
                let error = await #expect(throws: PostgresError.self) {
                    try await pool.query("SELECT \(Date(timeIntervalSince1970: seconds))::timestamptz")
                }
                #expect(error?.sqlState == "22007")
            }
            // The sessions stay usable.
            #expect(try await pool.query("SELECT 1").single().decode(Int.self, at: 0) == 1)
        }
    }
}
