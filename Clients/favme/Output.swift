import Foundation

/// Prints a command's result: the JSON document with `--json`, else the human text.
struct Output {
    let json: Bool

    /// The API's JSON conventions: ISO 8601 dates; keys sorted and one line per document, for tools that read lines.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    func show(_ document: some Encodable, text: () -> String) throws {
        if json {
            print(try Self.encode(document))
        } else {
            let rendered = text()
            if !rendered.isEmpty { print(rendered) }
        }
    }
}

/// A plain-text table: columns padded to their widest cell, long cells cut with "…", no trailing spaces.
struct Table {
    struct Column {
        var title: String
        /// The most characters a cell shows.
        var maxWidth = 40
    }

    var columns: [Column]
    var rows: [[String]] = []

    init(_ columns: [Column]) { self.columns = columns }

    mutating func add(_ cells: [String]) { rows.append(cells) }

    func render() -> String {
        let cut = rows.map { row in
            columns.indices.map { index in Self.shorten(index < row.count ? row[index] : "", to: columns[index].maxWidth) }
        }
        let widths = columns.indices.map { index in
            max(1, columns[index].title.count, cut.map { $0[index].count }.max() ?? 0)
        }
        func line(_ cells: [String]) -> String {
            columns.indices.map { cells[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        return ([line(columns.map(\.title))] + cut.map(line)).joined(separator: "\n")
    }

    /// One line, at most `width` characters.
    static func shorten(_ text: String, to width: Int) -> String {
        let flat = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return flat.count <= width ? flat : String(flat.prefix(max(width - 1, 0))) + "…"
    }
}

/// Label-value lines, labels aligned (a detail view, a profile).
struct Fields {
    private var lines: [(String, String)] = []

    mutating func add(_ label: String, _ value: String?) {
        guard let value, !value.isEmpty else { return }
        lines.append((label, value))
    }

    func render() -> String {
        let width = lines.map(\.0.count).max() ?? 0
        return lines.map { label, value in
            let padded = label.padding(toLength: width, withPad: " ", startingAt: 0)
            // Continuation lines of a long value start under the value.
            let indent = "\n" + String(repeating: " ", count: width + 2)
            return padded + "  " + value.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: indent)
        }.joined(separator: "\n")
    }
}

enum Format {
    static func number(_ value: Double?) -> String {
        guard let value else { return "" }
        return value.rounded() == value ? String(format: "%.0f", value) : String(format: "%.2f", value)
    }

    static func date(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash))
    }

    static func dateTime(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false)
            .timeSeparator(.colon).dateTimeSeparator(.space).timeZone(separator: .omitted))
    }

    /// An event's day and time at the venue ("2016-07-27 19:30").
    static func localWhen(date: String?, time: String?) -> String {
        [date, time.map { String($0.prefix(5)) }].compactMap { $0 }.joined(separator: " ")
    }
}
