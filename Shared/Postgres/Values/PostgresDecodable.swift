import Foundation

/// A Swift type that can be read from a column in PostgreSQL's text output format.
public protocol PostgresDecodable: Sendable {
    /// Reads a non-NULL value; `nil` when the text does not fit the type.
    init?(postgresText text: String)
    /// The value standing for SQL NULL, or `nil` when the type does not accept NULL (only `Optional` does).
    static var postgresNull: Self? { get }
}

extension PostgresDecodable {
    public static var postgresNull: Self? { nil }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init?(postgresText text: String) {
        guard let value = Wrapped(postgresText: text) else { return nil }
        self = .some(value)
    }
    public static var postgresNull: Self? { .some(.none) }
}

extension String: PostgresDecodable {
    public init?(postgresText text: String) { self = text }
}

extension Int: PostgresDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Int16: PostgresDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Int32: PostgresDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Int64: PostgresDecodable {
    public init?(postgresText text: String) { self.init(text) }
}

extension Double: PostgresDecodable {
    /// Also reads `numeric` text; PostgreSQL prints `Infinity`, `-Infinity` and `NaN` for special values.
    public init?(postgresText text: String) {
        switch text {
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        case "NaN": self = .nan
        default: self.init(text)
        }
    }
}

extension Bool: PostgresDecodable {
    public init?(postgresText text: String) {
        switch text {
        case "t": self = true
        case "f": self = false
        default: return nil
        }
    }
}

extension UUID: PostgresDecodable {
    public init?(postgresText text: String) { self.init(uuidString: text) }
}

extension Decimal: PostgresDecodable {
    public init?(postgresText text: String) { self.init(string: text, locale: Locale(identifier: "en_US_POSIX")) }
}

extension Date: PostgresDecodable {
    /// Reads `timestamptz` as printed in the UTC/ISO session every connection sets up.
    public init?(postgresText text: String) {
        guard let date = PostgresTimestamp.parse(text) else { return nil }
        self = date
    }
}

extension Data: PostgresDecodable {
    /// Reads `bytea` in hex output form (`\x…`, the server default since 9.0).
    public init?(postgresText text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0
        else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = utf8[index].hexValue, let low = utf8[index + 1].hexValue else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }
}

extension PostgresJSON: PostgresDecodable {
    public init?(postgresText text: String) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let value = try? decoder.decode(Value.self, from: Data(text.utf8)) else { return nil }
        self.init(value)
    }
}

extension UInt8 {
    var hexValue: UInt8? {
        switch self {
        case 48...57: self - 48
        case 97...102: self - 87
        case 65...70: self - 55
        default: nil
        }
    }
}
