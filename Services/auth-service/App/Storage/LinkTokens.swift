import Foundation
import Postgres

/// SQL for `link_tokens`: the one live token per account and purpose. Functions run inside the caller's transaction.
enum LinkTokens {
    /// A live token's row, as ``replace(with:for:issuedAt:expiresAt:on:)`` found it.
    struct Row: Sendable {
        var digest: Data
        var issuedAt: Date
        var expiresAt: Date
    }

    /// Makes `token` the account's live one for `purpose`: any earlier link for it stops working. Returns the row it
    /// replaced, for ``restore(_:replacing:for:on:)``.
    static func replace(with token: LinkToken, for purpose: LinkPurpose, issuedAt: Date, expiresAt: Date,
                        on connection: isolated PostgresConnection) async throws -> Row? {
        let previous = try await connection.query("""
            SELECT digest, issued_at, expires_at FROM link_tokens
             WHERE user_id = \(token.accountID) AND purpose = \(purpose.rawValue)
               FOR UPDATE
            """).rows.first.map { row in
            Row(digest: try row.decode(Data.self, column: "digest"),
                issuedAt: try row.decode(Date.self, column: "issued_at"),
                expiresAt: try row.decode(Date.self, column: "expires_at"))
        }
        try await connection.query("""
            INSERT INTO link_tokens (user_id, purpose, digest, issued_at, expires_at)
            VALUES (\(token.accountID), \(purpose.rawValue), \(token.digest), \(issuedAt), \(expiresAt))
            ON CONFLICT (user_id, purpose)
            DO UPDATE SET digest = excluded.digest, issued_at = excluded.issued_at, expires_at = excluded.expires_at
            """)
        return previous
    }

    /// Undoes a ``replace(with:for:issuedAt:expiresAt:on:)`` whose link was never delivered: the account's previous
    /// link works again (or none, when there was none). Nothing happens once `token` was replaced or used meanwhile.
    static func restore(_ previous: Row?, replacing token: LinkToken, for purpose: LinkPurpose,
                        on connection: isolated PostgresConnection) async throws {
        if let previous {
            try await connection.query("""
                UPDATE link_tokens
                   SET digest = \(previous.digest), issued_at = \(previous.issuedAt), expires_at = \(previous.expiresAt)
                 WHERE user_id = \(token.accountID) AND purpose = \(purpose.rawValue) AND digest = \(token.digest)
                """)
        } else {
            try await connection.query("""
                DELETE FROM link_tokens
                 WHERE user_id = \(token.accountID) AND purpose = \(purpose.rawValue) AND digest = \(token.digest)
                """)
        }
    }

    /// The account's live token for `purpose`, its row locked until the transaction ends when `forUpdate`.
    static func stored(for accountID: UUID, purpose: LinkPurpose, forUpdate: Bool,
                       on connection: isolated PostgresConnection) async throws -> LinkToken.Stored? {
        let result = forUpdate
            ? try await connection.query("""
                SELECT digest, expires_at FROM link_tokens WHERE user_id = \(accountID) AND purpose = \(purpose.rawValue)
                   FOR UPDATE
                """)
            : try await connection.query("""
                SELECT digest, expires_at FROM link_tokens WHERE user_id = \(accountID) AND purpose = \(purpose.rawValue)
                """)
        return try result.rows.first.map { row in
            LinkToken.Stored(digest: try row.decode(Data.self, column: "digest"),
                             expiresAt: try row.decode(Date.self, column: "expires_at"))
        }
    }

    /// Uses up the account's token for `purpose`: a link works once.
    static func delete(for accountID: UUID, purpose: LinkPurpose, on connection: isolated PostgresConnection)
        async throws {
        try await connection.query(
            "DELETE FROM link_tokens WHERE user_id = \(accountID) AND purpose = \(purpose.rawValue)")
    }

    /// Forgets tokens that expired before `date` (a used one is gone already).
    static func prune(expiredBefore date: Date, on pool: DatabasePool) async throws -> Int {
        try await pool.query("DELETE FROM link_tokens WHERE expires_at < \(date)").affectedRows
    }
}
