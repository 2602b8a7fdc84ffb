import Foundation

/// The whole result of one statement, copied out of libpq (results are buffered whole by the server protocol).
public struct QueryResult: Sendable {
    /// Column names in order.
    public let columns: [String]
    /// Rows of text values; `nil` is SQL NULL.
    public let rows: [PostgresRow]
    /// Rows inserted, updated, deleted or returned, as the server reports it (`PQcmdTuples`); 0 when not reported.
    public let affectedRows: Int

    init(columns: [String], values: [[String?]], affectedRows: Int) {
        let names = ColumnNames(columns)
        self.columns = columns
        self.rows = values.map { PostgresRow(values: $0, columns: names) }
        self.affectedRows = affectedRows
    }

    /// The single row of a statement that must return exactly one.
    public func single() throws -> PostgresRow {
        guard rows.count == 1 else {
            throw PostgresError.client("expected exactly one row, got \(rows.count)")
        }
        return rows[0]
    }

    /// Decodes the first column of every row.
    public func decode<Value: PostgresDecodable>(column: Int = 0, as type: Value.Type) throws -> [Value] {
        try rows.map { try $0.decode(type, at: column) }
    }

    /// Decodes every row as a tuple of the given types, column by column.
    public func decode<each Value: PostgresDecodable>(_ types: (repeat each Value).Type) throws -> [(repeat each Value)] {
        try rows.map { try $0.decode(types) }
    }
}

/// Shared, immutable column-name lookup for all rows of one result.
final class ColumnNames: Sendable {
    let names: [String]
    init(_ names: [String]) { self.names = names }
    func index(of name: String) -> Int? { names.firstIndex(of: name) }
}

/// One row of a ``QueryResult``.
public struct PostgresRow: Sendable {
    /// Raw text values; `nil` is SQL NULL.
    public let values: [String?]
    let columns: ColumnNames

    /// Decodes the value at `index`, throwing an error that names the column when it does not fit.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, at index: Int) throws -> Value {
        guard values.indices.contains(index) else {
            throw PostgresError.client("column index \(index) is out of range (\(values.count) columns)")
        }
        let column = columns.names[index]
        guard let text = values[index] else {
            guard let null = Value.postgresNull else { throw PostgresDecodingError(column: column, type: Value.self, isNull: true) }
            return null
        }
        guard let value = Value(postgresText: text) else {
            throw PostgresDecodingError(column: column, type: Value.self, isNull: false)
        }
        return value
    }

    /// Decodes the value of the column named `column`.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, column: String) throws -> Value {
        guard let index = columns.index(of: column) else {
            throw PostgresError.client("no column named \(column) in the result")
        }
        return try decode(type, at: index)
    }

    /// Decodes the row's columns, left to right, as a tuple: `try row.decode((UUID, String, Date?).self)`.
    public func decode<each Value: PostgresDecodable>(_ types: (repeat each Value).Type) throws -> (repeat each Value) {
        var index = 0
        func next<Column: PostgresDecodable>(_ type: Column.Type) throws -> Column {
            defer { index += 1 }
            return try decode(type, at: index)
        }
        return (repeat try next((each Value).self))
    }
}

/// A column whose value does not fit the requested Swift type. The value itself is never included: it may be
/// personal data.
public struct PostgresDecodingError: Error, CustomStringConvertible, Sendable {
    public let column: String
    public let typeName: String
    public let isNull: Bool

    init<Value>(column: String, type: Value.Type, isNull: Bool) {
        self.column = column
        self.typeName = String(describing: type)
        self.isNull = isNull
    }

    public var description: String {
        isNull
            ? "column \"\(column)\" is NULL, which \(typeName) cannot hold (decode an Optional)"
            : "column \"\(column)\" cannot be decoded as \(typeName)"
    }
}
