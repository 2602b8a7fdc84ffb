import Contracts
import Crypto
import Foundation
import Postgres
import ServiceKit

/// Device credentials: 256 random bits, base64url, given to a device when an account signs in on it, and sent back by
/// that device with its later sign-ins. Only their SHA-256 digest is stored, in `known_devices`.
struct KnownDevices: Sendable {
    let pool: DatabasePool
    /// Credentials kept per account, the newest: enough for a person's devices, and a bound on the table.
    static let keptPerAccount = 20

    /// A new credential for a device of `userID`, stored in the caller's transaction.
    static func issue(for userID: UUID, now: Date, on connection: isolated PostgresConnection) async throws -> String {
        let credential = RandomBytes.base64URL(count: 32)
        try await connection.query("""
            INSERT INTO known_devices (credential_digest, user_id, issued_at)
            VALUES (\(digest(credential)), \(userID), \(now))
            """)
        try await connection.query("""
            DELETE FROM known_devices
             WHERE user_id = \(userID)
               AND credential_digest NOT IN (SELECT credential_digest FROM known_devices WHERE user_id = \(userID)
                                              ORDER BY issued_at DESC LIMIT \(Self.keptPerAccount))
            """)
        return credential
    }

    /// Forgets every device credential of `userID`, in the caller's transaction: what proved a device had the old
    /// password must not outlive it (a password change or reset, signing out everywhere).
    static func forgetAll(of userID: UUID, on connection: isolated PostgresConnection) async throws {
        try await connection.query("DELETE FROM known_devices WHERE user_id = \(userID)")
    }

    /// The account `credential` was given for, or nil (unknown, pruned, or not one of ours).
    func owner(of credential: String) async throws -> UUID? {
        guard credential.utf8.count == 43, Data(base64URLEncoded: credential)?.count == 32 else { return nil }
        return try await pool.query("SELECT user_id FROM known_devices WHERE credential_digest = \(Self.digest(credential))")
            .values(UUID.self).first
    }

    /// A short, stable name for a credential in the throttle's keys (never the credential itself).
    static func throttleName(of credential: String) -> String {
        digest(credential).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    private static func digest(_ credential: String) -> Data {
        Data(SHA256.hash(data: Data(credential.utf8)))
    }
}
