import Contracts
import Foundation
import Postgres

/// A user row, password hash included: never leaves the service.
struct Account: Sendable, Equatable {
    var id: UUID
    var email: String
    var passwordHash: String
    var experience: ExperienceID
    var preferences: [String: String]
    var createdAt: Date
    var emailVerified: Bool = false
    var displayName: String?

    var profile: UserProfile {
        UserProfile(id: id, email: email, experience: experience, preferences: preferences, createdAt: createdAt,
                    emailVerified: emailVerified, displayName: displayName)
    }
}

/// SQL for `users`. Functions taking a connection run inside the caller's transaction.
struct AccountStore: Sendable {
    let pool: DatabasePool

    /// Inserts `account`, created by the sign-up whose key digest is `signUpKey` (if it had one); throws
    /// ``AccountError/emailTaken`` when the email has an account.
    static func insert(_ account: Account, signUpKey: Data?, on connection: isolated PostgresConnection) async throws {
        do {
            try await connection.query("""
                INSERT INTO users (id, email, password_hash, experience, preferences, created_at, updated_at,
                                   password_changed_at, signup_key)
                VALUES (\(account.id), \(account.email), \(account.passwordHash), \(account.experience.rawValue),
                        \(PostgresJSON(account.preferences))::jsonb, \(account.createdAt), \(account.createdAt),
                        \(account.createdAt), \(signUpKey))
                """)
        } catch let error as PostgresError where error.isUniqueViolation && error.constraint == "users_email_key" {
            throw AccountError.emailTaken
        }
    }

    /// Whether the account of `email` was created by a sign-up with the key digest `signUpKey`.
    func wasCreated(email: EmailAddress, bySignUpWithKey signUpKey: Data) async throws -> Bool {
        try await !pool.query(
            "SELECT 1 FROM users WHERE email = \(email.value) AND signup_key = \(signUpKey)"
        ).rows.isEmpty
    }

    /// Whether the account's current password was set by a change with the key digest `changeKey`.
    func passwordWasSet(id: UUID, byChangeWithKey changeKey: Data) async throws -> Bool {
        try await !pool.query(
            "SELECT 1 FROM users WHERE id = \(id) AND password_change_key = \(changeKey)"
        ).rows.isEmpty
    }

    func find(email: EmailAddress) async throws -> Account? {
        try await pool.query("""
            SELECT \(raw: Self.columns) FROM users WHERE email = \(email.value)
            """, prepare: true).rows.first.map(Self.account)
    }

    func find(id: UUID) async throws -> Account? {
        try await pool.query("""
            SELECT \(raw: Self.columns) FROM users WHERE id = \(id)
            """, prepare: true).rows.first.map(Self.account)
    }

    /// The account, its row locked until the transaction ends when `forUpdate` (read-modify-write of preferences).
    static func find(id: UUID, forUpdate: Bool, on connection: isolated PostgresConnection) async throws -> Account? {
        let result = forUpdate
            ? try await connection.query("""
                SELECT \(raw: Self.columns) FROM users WHERE id = \(id)
                   FOR UPDATE
                """)
            : try await connection.query("""
                SELECT \(raw: Self.columns) FROM users WHERE id = \(id)
                """)
        return try result.rows.first.map(account)
    }

    /// Stores a new experience, preferences and/or display name; nil leaves a field as it is (`displayName`
    /// `.some(nil)` removes the name). When `changed`, the profile's version counts up and its change is stamped with
    /// the database's clock, for the feed of profile changes. Returns the updated account.
    static func update(id: UUID, experience: ExperienceID?, preferences: [String: String]?, displayName: String??,
                       changed: Bool, now: Date, on connection: isolated PostgresConnection) async throws -> Account? {
        try await connection.query("""
            UPDATE users
               SET experience = coalesce(\(experience?.rawValue), experience),
                   preferences = coalesce(\(preferences.map(PostgresJSON.init))::jsonb, preferences),
                   display_name = CASE WHEN \(displayName != nil) THEN \(displayName ?? nil)::text
                                       ELSE display_name END,
                   profile_version = profile_version + CASE WHEN \(changed) THEN 1 ELSE 0 END,
                   profile_changed_at = CASE WHEN \(changed) THEN now() ELSE profile_changed_at END,
                   updated_at = \(now)
             WHERE id = \(id)
            RETURNING \(raw: Self.columns)
            """).rows.first.map(account)
    }

    /// Sets a new password, remembering the change's key digest (nil: none, and any earlier one is forgotten).
    static func updatePassword(id: UUID, hash: String, changeKey: Data?, now: Date,
                               on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            UPDATE users SET password_hash = \(hash), password_change_key = \(changeKey), password_changed_at = \(now),
                             updated_at = \(now)
             WHERE id = \(id)
            """)
    }

    /// Deletes the account; its sessions and refresh tokens go with it (foreign keys cascade), and the deletion is
    /// recorded for the services that hold data of the user.
    static func delete(id: UUID, now: Date, on connection: isolated PostgresConnection) async throws -> Bool {
        try await connection.query("""
            INSERT INTO account_deletions (user_id, deleted_at) VALUES (\(id), \(now)) ON CONFLICT DO NOTHING
            """)
        return try await connection.query("DELETE FROM users WHERE id = \(id)").affectedRows == 1
    }

    func pruneDeletions(before date: Date) async throws {
        try await pool.query("DELETE FROM account_deletions WHERE deleted_at < \(date)")
    }

    /// Deletions after `since`, oldest first.
    /// Deletions after (`since`, `after`) in the order of (the deletion time to the second, user id): the feed's
    /// times travel in JSON to the second, so that is the key a caller can page by without skipping anyone.
    func deletions(since: Date, after: UUID, limit: Int) async throws -> [DeletedAccounts.Entry] {
        try await pool.query("""
            SELECT user_id, date_trunc('second', deleted_at) AS second FROM account_deletions
             WHERE deleted_at >= date_trunc('second', \(since)::timestamptz)  -- what the index can narrow
               AND (date_trunc('second', deleted_at), user_id) > (date_trunc('second', \(since)::timestamptz), \(after)::uuid)
             ORDER BY second, user_id LIMIT \(limit)
            """).rows.map { DeletedAccounts.Entry(userId: try $0.decode(UUID.self, column: "user_id"),
                                                   deletedAt: try $0.decode(Date.self, column: "second")) }
    }

    /// Profiles changed at or after `since` (the database's clock), oldest first, at most `limit`; and the database's
    /// time now.
    func profileChanges(since: Date, limit: Int) async throws -> ProfileChanges {
        try await pool.withSession { connection in
            let asOf = try await connection.query("SELECT now()").scalar(Date.self)
            let rows = try await connection.query("""
                SELECT id, profile_version, profile_changed_at, experience, preferences, display_name FROM users
                 WHERE profile_changed_at >= \(since)::timestamptz
                 ORDER BY profile_changed_at, id LIMIT \(limit)
                """)
            let changes = try rows.rows.map { row in
                ProfileChange(userId: try row.decode(UUID.self, column: "id"),
                              version: try row.decode(Int64.self, column: "profile_version"),
                              changedAt: try row.decode(Date.self, column: "profile_changed_at"),
                              experience: ExperienceID(rawValue: try row.decode(String.self, column: "experience")),
                              preferences: try Self.preferences(row),
                              displayName: try row.decode(String?.self, column: "display_name"))
            }
            return ProfileChanges(changes: changes, asOf: asOf)
        }
    }

    /// The address a mail for `email` goes to, and whether it is verified: nil when no account has it.
    static func recipient(email: String, on connection: isolated PostgresConnection) async throws
        -> (id: UUID, emailVerified: Bool)? {
        try await connection.query("""
            SELECT id, email_verified_at IS NOT NULL AS email_verified FROM users WHERE email = \(email)
            """).rows.first.map { row in
            (try row.decode(UUID.self, column: "id"), try row.decode(Bool.self, column: "email_verified"))
        }
    }

    /// Records that the owner of the account's email followed a mailed link (the first time counts).
    static func markEmailVerified(id: UUID, now: Date, on connection: isolated PostgresConnection) async throws {
        try await connection.query("""
            UPDATE users SET email_verified_at = coalesce(email_verified_at, \(now)) WHERE id = \(id)
            """)
    }

    private static let columns: StaticString = """
        id, email, password_hash, experience, preferences, created_at, email_verified_at IS NOT NULL AS email_verified,
        display_name
        """

    private static func account(_ row: PostgresRow) throws -> Account {
        Account(id: try row.decode(UUID.self, column: "id"), email: try row.decode(String.self, column: "email"),
                passwordHash: try row.decode(String.self, column: "password_hash"),
                experience: ExperienceID(rawValue: try row.decode(String.self, column: "experience")),
                preferences: try preferences(row), createdAt: try row.decode(Date.self, column: "created_at"),
                emailVerified: try row.decode(Bool.self, column: "email_verified"),
                displayName: try row.decode(String?.self, column: "display_name"))
    }

    private static func preferences(_ row: PostgresRow) throws -> [String: String] {
        try row.decode(PostgresJSON<[String: String]>.self, column: "preferences").value
    }
}

enum AccountError: Error {
    case emailTaken
}
