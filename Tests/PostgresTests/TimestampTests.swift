import Foundation
import Testing
@testable import PostgresValues

/// The pure text codecs, without a server.
@Suite struct TimestampTests {
    @Test(arguments: [
        ("2026-11-22 17:08:00.5+00", 1_795_367_280.5),
        ("2026-11-22T17:08:00Z", 1_795_367_280.0),
        ("1970-01-01 00:00:00+00", 0.0),
        ("2000-02-29 12:00:00.000001+00", 951_825_600.000001),
        ("2026-11-22 18:38:00+01:30", 1_795_367_280.0),
        ("1969-12-31 23:59:59+00", -1.0),
    ])
    func parsesServerText(text: String, seconds: Double) throws {
        let date = try #require(PostgresTimestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001)
    }

    @Test(arguments: ["", "2026-13-01 00:00:00+00", "2026-11-22", "yesterday", "2026-11-22 17:08:00+0x"])
    func rejectsMalformedText(text: String) {
        #expect(PostgresTimestamp.parse(text) == nil)
    }

    @Test func formatsAsUTCWithMicroseconds() {
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1_795_367_280.5))
            == "2026-11-22T17:08:00.500000Z")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000000Z")
    }

    @Test func formatAndParseAreInverse() throws {
        for seconds in stride(from: -5_000_000_000.0, to: 5_000_000_000.0, by: 123_456_789.123456) {
            let date = Date(timeIntervalSince1970: (seconds * 1_000_000).rounded() / 1_000_000)
            let parsed = try #require(PostgresTimestamp.parse(PostgresTimestamp.format(date)))
            #expect(abs(parsed.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_002)
        }
    }

    @Test func byteaHexRoundTrip() throws {
        let data = Data([0x00, 0x48, 0xff, 0x10])
        #expect(data.postgresText == "\\x0048ff10")
        #expect(Data(postgresText: "\\x0048FF10") == data)
        #expect(Data(postgresText: "\\x0") == nil)
        #expect(Data(postgresText: "0048") == nil)
    }

    @Test func quotingMasksValuesInMessages() {
        #expect(PostgresError.maskQuoted(#"invalid input syntax for type integer: "12abc""#)
            == #"invalid input syntax for type integer: "…""#)
    }

    @Test func connectionStringKeepsUserOptionsAndAddsOurs() throws {
        let configuration = ConnectionConfiguration(
            connectionString: "postgresql://u:p@db1:5432,db2:5433/app?target_session_attrs=read-write&options=-c%20work_mem%3D8MB",
            applicationName: "favorites-service", searchPath: "favorites"
        )
        let keywords = Dictionary(try configuration.keywords(), uniquingKeysWith: { $1 })
        #expect(keywords["host"] == "db1,db2")
        #expect(keywords["port"] == "5432,5433")
        #expect(keywords["target_session_attrs"] == "read-write")
        #expect(keywords["fallback_application_name"] == "favorites-service")
        #expect(keywords["options"]?.hasPrefix("-c work_mem=8MB -c TimeZone=UTC") == true)
        #expect(keywords["options"]?.contains("-c search_path=favorites") == true)
        #expect(keywords["connect_timeout"] == "5")
    }
}
