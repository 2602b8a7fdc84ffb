import Foundation
import Postgres
import TestSupport
import Testing

/// Hostile strings passed as values are stored verbatim and never executed.
@Suite struct InjectionTests {
    static let hostile = [
        "'; DROP TABLE notes; --",
        "' OR '1'='1",
        "$1",
        "\\'; SELECT pg_sleep(10); --",
        "Robert'); DELETE FROM notes WHERE ('1'='1",
        "\"quoted\" identifier\"",
        "E'\\x41'",
    ]

    /// A fragment's parameters are numbered after the statement's own, however many digits; a `$` that numbers
    /// nothing is left as it is.
    @Test func aFragmentsParametersFollowTheStatements() {
        let fragment: SQL = """
            a IN (\(1), \(2), \(3), \(4), \(5), \(6), \(7), \(8), \(9)) AND b = '$' || \(10) || '$x'
            """
        let statement: SQL = "SELECT \(0) WHERE \(fragment: fragment) AND c = \(11)"
        #expect(statement.text
            == "SELECT $1 WHERE a IN ($2, $3, $4, $5, $6, $7, $8, $9, $10) AND b = '$' || $11 || '$x' AND c = $12")
        #expect(statement.parameters == (0...11).map { String($0) })
    }

    @Test func hostileValuesAreStoredVerbatim() async throws {
        try await withTestPool { pool, _ in
            try await pool.query("CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)")
            for value in Self.hostile {
                try await pool.query("INSERT INTO notes (body) VALUES (\(value))")
            }
            let stored = try await pool.query("SELECT body FROM notes ORDER BY id").values(String.self)
            #expect(stored == Self.hostile)
            // A lookup by a hostile value matches only that exact row.
            let matches = try await pool.query("SELECT count(*) FROM notes WHERE body = \("' OR '1'='1")")
                .scalar(Int.self)
            #expect(matches == 1)
        }
    }

    @Test func quotedIdentifiersCannotBreakOut() async throws {
        try await withTestPool { pool, _ in
            let name = "odd\"; DROP TABLE x; --"
            try await pool.query("CREATE TABLE \(identifier: name) (v int)")
            try await pool.query("INSERT INTO \(identifier: name) VALUES (\(1))")
            let count = try await pool.query("SELECT count(*) FROM \(identifier: name)").scalar(Int.self)
            #expect(count == 1)
        }
    }

    @Test func parametersWithNulCharactersAreRefused() async throws {
        try await withTestPool { pool, _ in
            let error = await #expect(throws: PostgresError.self) {
                try await pool.query("SELECT \("nul\u{0}byte")::text")
            }
            #expect(error?.kind == .client)
        }
    }

    @Test func sqlDescriptionNeverContainsParameterValues() {
        let secret = "hunter2-password"
        let sql: SQL = "SELECT * FROM users WHERE password = \(secret)"
        #expect(sql.description == "SELECT * FROM users WHERE password = $1")
        #expect(sql.parameters == [secret])
    }

    /// A shared clause keeps its own parameters, renumbered after the statement's, whatever their order of use.
    @Test func aFragmentSplicedIntoAStatementKeepsItsParameters() async throws {
        let clause: SQL = "body = \("b") OR body = \("$1 is text, not a placeholder")"
        let statement: SQL = "SELECT count(*) FROM notes WHERE id > \(0) AND (\(fragment: clause)) AND \(true)"
        #expect(statement.text == "SELECT count(*) FROM notes WHERE id > $1 AND (body = $2 OR body = $3) AND $4")
        #expect(statement.parameters == ["0", "b", "$1 is text, not a placeholder", "t"])
        try await withTestPool { pool, _ in
            try await pool.query("CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)")
            for body in ["a", "b", "$1 is text, not a placeholder"] { try await pool.query("INSERT INTO notes (body) VALUES (\(body))") }
            #expect(try await pool.query(statement).scalar(Int.self) == 2)
        }
    }
}
