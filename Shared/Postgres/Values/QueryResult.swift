import CLibpq
import Foundation

/// The whole result of one statement (the server protocol delivers results whole). Values are read from libpq's
/// result in place, only when decoded: a statement costs no copy of its rows into Swift strings.
public struct QueryResult: Sendable {
    private let storage: ResultStorage
    /// The rows, in order.
    public var rows: PostgresRows { PostgresRows(storage: storage) }

    /// Takes ownership of `result`, which must be a successful one.
    package init(taking result: OpaquePointer) {
        storage = ResultStorage(result)
    }

    /// Column names in order.
    public var columns: [String] {
        (0..<storage.columnCount).map { storage.columnName($0) }
    }

    /// Rows inserted, updated, deleted or returned, as the server reports it (`PQcmdTuples`); 0 when not reported.
    public var affectedRows: Int {
        PQcmdTuples(storage.result).map { Int(String(cString: $0)) ?? 0 } ?? 0
    }

    /// The single row of a statement that must return exactly one.
    public func single() throws -> PostgresRow {
        guard rows.count == 1 else {
            throw PostgresError.client("expected exactly one row, got \(rows.count)")
        }
        return rows[0]
    }

    /// The value of a statement that returns one row of one column: `SELECT now()`.
    public func scalar<Value: PostgresDecodable>(_ type: Value.Type) throws -> Value {
        try single().value(type)
    }

    /// The values of a one-column result, one per row.
    public func values<Value: PostgresDecodable>(_ type: Value.Type) throws -> [Value] {
        try rows.map { try $0.value(type) }
    }

    /// The values of the column named `column`, one per row.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, column: String) throws -> [Value] {
        let index = try storage.columnIndex(named: column)
        return try rows.map { try $0.decode(type, at: index) }
    }
}

/// Owns a `PGresult`, freed with the last result or row that refers to it.
///
/// `@unchecked Sendable`: a `PGresult` is never changed once libpq has built it, and libpq documents that it may then
/// be read from any thread; `PQclear` runs once, when nothing can read it any more.
final class ResultStorage: @unchecked Sendable {
    let result: OpaquePointer
    let rowCount: Int
    let columnCount: Int
    /// Each column's index by name, resolved once so that reading a list by name costs no scan per value.
    private let indexesByName: [String: Int]
    /// Names that more than one column carries (`SELECT a.id, b.id`): reading them by name would be a guess.
    private let repeatedNames: Set<String>

    init(_ result: OpaquePointer) {
        self.result = result
        rowCount = Int(PQntuples(result))
        columnCount = Int(PQnfields(result))
        var indexes = [String: Int](minimumCapacity: columnCount)
        var repeated = Set<String>()
        for column in 0..<columnCount {
            let name = String(cString: PQfname(result, Int32(column)))
            if indexes[name] == nil { indexes[name] = column } else { repeated.insert(name) }
        }
        indexesByName = indexes
        repeatedNames = repeated
    }

    deinit { PQclear(result) }

    func columnName(_ column: Int) -> String {
        String(cString: PQfname(result, Int32(column)))
    }

    /// The column called `name`, compared exactly (unlike `PQfnumber`, which folds unquoted names to lower case).
    func columnIndex(named name: String) throws -> Int {
        guard let index = indexesByName[name] else {
            throw PostgresError.client("no column named \(name) in the result (columns: \(columnNames))")
        }
        guard !repeatedNames.contains(name) else {
            throw PostgresError.client("more than one column is named \(name): give each an alias")
        }
        return index
    }

    private var columnNames: String {
        (0..<columnCount).map(columnName).joined(separator: ", ")
    }

    /// The text of one value; `nil` is SQL NULL.
    func text(row: Int, column: Int) -> String? {
        let (row, column) = (Int32(row), Int32(column))
        guard PQgetisnull(result, row, column) == 0, let bytes = PQgetvalue(result, row, column) else { return nil }
        let length = Int(PQgetlength(result, row, column))
        return bytes.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// The rows of a ``QueryResult``.
public struct PostgresRows: RandomAccessCollection, Sendable {
    let storage: ResultStorage

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.rowCount }

    public subscript(position: Int) -> PostgresRow {
        precondition(indices.contains(position), "row index out of range")
        return PostgresRow(storage: storage, row: position)
    }
}

/// One row of a ``QueryResult``, read by column name so that the SQL's column order cannot matter.
public struct PostgresRow: Sendable {
    let storage: ResultStorage
    let row: Int

    /// Decodes the value of the column named `column`, throwing an error that names it when it does not fit.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, column: String) throws -> Value {
        try decode(type, at: try storage.columnIndex(named: column))
    }

    /// Decodes the value of a one-column row (`SELECT now()`, `SELECT lock_event_stream(…)`).
    public func value<Value: PostgresDecodable>(_ type: Value.Type) throws -> Value {
        guard storage.columnCount == 1 else {
            throw PostgresError.client("expected exactly one column, got \(storage.columnCount): decode by name")
        }
        return try decode(type, at: 0)
    }

    /// Decodes the value at `index`. Internal: outside the wrapper, rows are read by name.
    func decode<Value: PostgresDecodable>(_ type: Value.Type, at index: Int) throws -> Value {
        guard let text = storage.text(row: row, column: index) else {
            guard let null = Value.postgresNull else {
                throw PostgresDecodingError(column: storage.columnName(index), type: Value.self, isNull: true)
            }
            return null
        }
        guard let value = Value(postgresText: text) else {
            throw PostgresDecodingError(column: storage.columnName(index), type: Value.self, isNull: false)
        }
        return value
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
