import Foundation

/// A SQL statement whose every interpolated value becomes a bound parameter (`$1`, `$2`, …).
///
/// There is deliberately no initializer from a runtime `String`: text can only come from literals, so a value can
/// never be spliced into the statement by accident.
///
///     let rows = try connection.query("SELECT id FROM users WHERE email = \(email) AND active = \(true)")
///
/// Identifiers that cannot be parameters go through ``Interpolation/appendInterpolation(identifier:)``, which
/// quotes them; fixed fragments chosen at run time (a sort order) go through
/// ``Interpolation/appendInterpolation(raw:)``, which only accepts compile-time constants; a clause shared by several
/// statements, with its own parameters, goes through ``Interpolation/appendInterpolation(fragment:)``.
public struct SQL: ExpressibleByStringInterpolation, Sendable, Hashable, CustomStringConvertible {
    /// The statement text with `$n` placeholders.
    public private(set) var text: String
    /// The parameters in text form; `nil` is SQL NULL. Never logged.
    public private(set) var parameters: [String?]

    public init(stringLiteral value: StaticString) {
        self.text = value.description
        self.parameters = []
    }

    public init(stringInterpolation: Interpolation) {
        self.init(text: String(decoding: stringInterpolation.text, as: UTF8.self),
                  parameters: stringInterpolation.parameters)
    }

    /// The statement text only: parameter values may be personal data and must never reach a log.
    public var description: String { text }

    /// Builds the text as UTF-8 bytes, made a `String` once at the end: a write's statement is built on every request,
    /// and appending each literal to a `String` made a `String` of it first.
    public struct Interpolation: StringInterpolationProtocol {
        var text: [UInt8] = []
        var parameters: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: StaticString) {
            literal.withUTF8Buffer { text.append(contentsOf: $0) }
        }

        /// A value, sent as a bound parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            bind(value.postgresText)
        }

        /// An optional value; `nil` is sent as SQL NULL.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            bind(value?.postgresText)
        }

        /// A quoted identifier (schema, table or column name) for the rare statement that needs one.
        public mutating func appendInterpolation(identifier: String) {
            text.append(contentsOf: SQL.quoteIdentifier(identifier).utf8)
        }

        /// A fixed fragment picked at run time, e.g. one of several `ORDER BY` clauses. Only compile-time constants
        /// are accepted, so no input can reach the statement text this way.
        public mutating func appendInterpolation(raw fragment: StaticString) {
            appendLiteral(fragment)
        }

        /// Another statement's text and parameters, spliced in (each of its `$n` renumbered after this one's): for a
        /// condition or a clause several statements share, written once.
        public mutating func appendInterpolation(fragment: SQL) {
            let offset = parameters.count
            parameters += fragment.parameters
            guard offset > 0 else { return text.append(contentsOf: fragment.text.utf8) }
            let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
            var afterDollar = false
            var number: Int?  // the digits read since a `$`
            for byte in fragment.text.utf8 {
                if afterDollar, (zero...nine).contains(byte) {
                    number = (number ?? 0) * 10 + Int(byte - zero)
                    continue
                }
                if let finished = number { appendNumber(finished + offset) }
                number = nil
                afterDollar = byte == UInt8(ascii: "$")
                text.append(byte)
            }
            if let finished = number { appendNumber(finished + offset) }
        }

        mutating func bind(_ value: String?) {
            parameters.append(value)
            text.append(UInt8(ascii: "$"))
            appendNumber(parameters.count)
        }

        private mutating func appendNumber(_ number: Int) {
            if number >= 10 { appendNumber(number / 10) }
            text.append(UInt8(ascii: "0") + UInt8(number % 10))
        }
    }

    private init(text: String, parameters: [String?]) {
        self.text = text
        self.parameters = parameters
    }

    /// Double-quotes an identifier, doubling embedded quotes, as PostgreSQL's `quote_ident` does.
    public static func quoteIdentifier(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A SQL script: several statements without parameters, run with the simple query protocol (migrations, set-up).
/// Like ``SQL``, it can only be written as a literal.
public struct SQLScript: Sendable, ExpressibleByStringLiteral {
    public let text: String
    public init(stringLiteral value: StaticString) { self.text = value.description }
    package init(_ text: StaticString) { self.text = text.description }
}
