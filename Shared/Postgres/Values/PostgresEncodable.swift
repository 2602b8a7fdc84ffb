import Foundation

/// A Swift value that can be sent to PostgreSQL as a text-format parameter.
///
/// Parameters are sent untyped, so the server infers each type from its use; where it cannot (`$1 IS NULL`,
/// `SELECT $1`), cast in the statement (`$1::uuid`).
public protocol PostgresEncodable: Sendable {
    /// The value in PostgreSQL's text input format.
    var postgresText: String { get }
}

extension String: PostgresEncodable {
    public var postgresText: String { self }
}

extension Substring: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int16: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int32: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Int64: PostgresEncodable {
    public var postgresText: String { String(self) }
}

extension Double: PostgresEncodable {
    /// Swift prints the shortest text that reads back to the same value; PostgreSQL reads `inf`, `-inf` and `nan`.
    public var postgresText: String { description }
}

extension Bool: PostgresEncodable {
    public var postgresText: String { self ? "t" : "f" }
}

extension UUID: PostgresEncodable {
    public var postgresText: String { lowercasedText }

    /// The canonical text, in lowercase (`5f0c…-…`), as PostgreSQL prints a `uuid`. Written here: Foundation's
    /// `uuidString` goes through `sprintf`, and `lowercased()` after it through Unicode case mapping, several times
    /// on every write.
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                let digits: StaticString = "0123456789abcdef"
                var end = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[end] = UInt8(ascii: "-")
                        end += 1
                    }
                    text[end] = digits.utf8Start[Int(byte >> 4)]
                    text[end + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    end += 2
                }
                return end
            }
        }
    }
}

extension Decimal: PostgresEncodable {
    public var postgresText: String { description }
}

extension Date: PostgresEncodable {
    /// ISO 8601 in UTC with microseconds, PostgreSQL's own precision for `timestamptz`.
    public var postgresText: String { PostgresTimestamp.format(self) }
}

extension Data: PostgresEncodable {
    /// `bytea` in hex form (`\x48656c6c6f`).
    public var postgresText: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text = [UInt8](repeating: 0, count: 2 + count * 2)
        text[0] = UInt8(ascii: "\\")
        text[1] = UInt8(ascii: "x")
        for (index, byte) in enumerated() {
            text[2 + index * 2] = digits[Int(byte >> 4)]
            text[3 + index * 2] = digits[Int(byte & 0x0f)]
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// A `json`/`jsonb` value: encoded with `JSONEncoder` on the way in, decoded with `JSONDecoder` on the way out.
/// Cast the parameter in SQL (`\(PostgresJSON(snapshot))::jsonb`).
public struct PostgresJSON<Value: Codable & Sendable>: Sendable {
    public var value: Value
    public init(_ value: Value) { self.value = value }
}

extension PostgresJSON: PostgresEncodable {
    public var postgresText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        // With non-finite floats handled, only a throwing custom `encode(to:)` can fail; such a value is stored as null.
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}
