import Tracing
import PostgresValues

/// What a span of the pool's work is named and says: a statement by its operation (`SELECT`, `INSERT`, …) with its text,
/// parameters never (they are bound, not in the text); a transaction or a session of several statements as such.
enum DatabaseSpan {
    case statement(SQL), transaction, session

    var name: String {
        switch self {
        case .statement(let sql): sql.operation
        case .transaction: "transaction"
        case .session: "session"
        }
    }

    func describe(in span: any Span) {
        span.attributes["db.system.name"] = "postgresql"
        if case .statement(let sql) = self {
            span.attributes["db.operation.name"] = sql.operation
            span.attributes["db.query.text"] = sql.text
        }
    }
}

extension SQL {
    /// The statement's first keyword, upper-cased (`WITH` for a common table expression).
    var operation: String {
        String(text.drop { $0.isWhitespace }.prefix { $0.isLetter }).uppercased()
    }
}
