import CLibpq
import Foundation

/// Every failure of the database module, as a value the services can branch on.
///
/// `description` (what logs show) holds the kind, the SQLSTATE, the constraint and the server's message with any
/// quoted text masked: messages such as `invalid input syntax for type integer: "12abc"` echo input, and `detail`
/// (`Key (email)=(…)`) holds row data, so neither is ever printed.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        /// The server refused the statement; `sqlState` says why.
        case server
        /// The session ended under us (server restart, `pg_terminate_backend`, network).
        case connectionLost
        /// No session could be opened (server down, wrong credentials, bad connection string).
        case connectFailed
        /// Every connection stayed busy for the whole lease timeout: the database is saturated.
        case poolTimeout
        /// The pool is shutting down.
        case poolClosed
        /// The statement ran past its deadline and was cancelled.
        case timeout
        /// A misuse of the API or an unexpected result shape.
        case client
    }

    public let kind: Kind
    /// The five-character SQLSTATE, when the server sent one.
    public let sqlState: String?
    /// The server's or libpq's primary message, unmasked. Not part of `description`.
    public let message: String
    /// The server's detail line. May contain row data: never log it.
    public let detail: String?
    /// The constraint a violation names, if any.
    public let constraint: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
    }

    package static func client(_ message: String) -> PostgresError {
        PostgresError(kind: .client, message: message)
    }

    /// 23505: a unique constraint (see `constraint`) refused the row.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// 40001: rerun the whole transaction.
    public var isSerializationFailure: Bool { sqlState == "40001" }
    /// 54000 (an index row over the index's limit; `constraint` names the index) or 22001 (a value longer than its
    /// column's type): a value too large to store, the client's to shorten.
    public var isValueTooLarge: Bool { sqlState == "54000" || sqlState == "22001" }
    /// The index a too-large row was refused by: the constraint field when the server sends it, else the name its
    /// message quotes (`… for index "favorites_by_title"`, which PostgreSQL 15 sends without the field).
    public var refusingIndex: String? {
        if let constraint { return constraint }
        guard let start = message.range(of: "for index \"")?.upperBound,
              let end = message[start...].firstIndex(of: "\"") else { return nil }
        return String(message[start..<end])
    }
    /// 40P01: rerun the whole transaction.
    public var isDeadlock: Bool { sqlState == "40P01" }
    /// 57014: cancelled by us, by `statement_timeout`, or by an operator.
    public var isQueryCancelled: Bool { sqlState == "57014" || kind == .timeout }
    /// 0A000 "cached plan must not change result type" (a migration changed a table under a prepared `SELECT *`) or
    /// 26000 (the server no longer knows the statement): the session's prepared statement must be made again.
    package var invalidatesPreparedStatement: Bool { sqlState == "0A000" || sqlState == "26000" }
    /// The session is gone; the statement may or may not have been applied.
    public var isConnectionLost: Bool { kind == .connectionLost }
    /// The database cannot serve right now (down, restarting, saturated, shutting down): a 503, not a bug.
    public var isUnavailable: Bool {
        switch kind {
        case .connectionLost, .connectFailed, .poolTimeout, .poolClosed: true
        case .server: sqlState.map(Self.unavailableStates.contains) ?? false
        case .timeout, .client: false
        }
    }

    /// Errors worth retrying as a whole transaction.
    public var isTransient: Bool { isSerializationFailure || isDeadlock }

    /// Server states meaning "not now": shutting down, starting up, too many connections, out of resources.
    static let unavailableStates: Set<String> = ["57P01", "57P02", "57P03", "53300", "53200", "53100", "08006", "08001"]

    public var description: String {
        var parts = ["postgres \(kind.rawValue)"]
        if let sqlState { parts.append("SQLSTATE \(sqlState)") }
        if let constraint { parts.append("constraint \(constraint)") }
        parts.append(Self.maskQuoted(message))
        return parts.joined(separator: ": ")
    }

    /// Replaces everything from the first double quote to the last with `"…"`: server messages quote the offending
    /// input there, and the input may hold quotes of its own, so pairs cannot be trusted. A quoted name in the same
    /// message (a column, a relation) goes too: a lost name costs less than a leaked value. An unpaired quote masks
    /// the rest.
    static func maskQuoted(_ message: String) -> String {
        guard let first = message.firstIndex(of: "\"") else {
            return message.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let last = message.lastIndex(of: "\"") ?? first
        let rest = last > first ? "\"" + message[message.index(after: last)...] : ""
        return (message[..<first] + "\"…" + rest).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension PostgresError {
    /// The error carried by a failed result, or by the connection when there is no result.
    package init(result: OpaquePointer?, connection: OpaquePointer?) {
        func field(_ code: Character) -> String? {
            guard let result, let ascii = code.asciiValue, let value = PQresultErrorField(result, Int32(ascii)) else {
                return nil
            }
            return String(cString: value)
        }
        let sqlState = field("C")
        let message = field("M")
            ?? connection.flatMap { PQerrorMessage($0).map { String(cString: $0) } }
            ?? "unknown libpq error"
        let connectionBroken = connection.map { PQstatus($0) == CONNECTION_BAD } ?? true
        let kind: Kind
        if let sqlState, !sqlState.hasPrefix("08"), sqlState != "57P01", sqlState != "57P02" {
            kind = .server
        } else if connectionBroken || sqlState != nil {
            kind = .connectionLost
        } else {
            kind = .client
        }
        self.init(kind: kind, sqlState: sqlState, message: message.trimmingCharacters(in: .whitespacesAndNewlines),
                  detail: field("D"), constraint: field("n"))
    }
}
