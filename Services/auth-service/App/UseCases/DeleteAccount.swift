import Contracts
import Foundation
import Logging
import Postgres

/// `DELETE /v1/auth/me`, once the password is re-confirmed: every session ends and is listed as revoked first, so its
/// access tokens stop working in every service; the deletion is recorded for the services that hold the user's data.
struct DeleteAccount: Sendable {
    let passwords: PasswordCheck
    let pool: DatabasePool

    func callAsFunction(_ account: Account, confirmedBy password: String, clientAddress: String, logger: Logger)
        async throws
    {
        try await passwords.confirm(password, of: account, clientAddress: clientAddress)
        let now = Date()
        try await pool.withTransaction { connection in
            try await SessionStore.end(userID: account.id, scope: .global, current: nil, reason: .accountDeleted,
                                       now: now, on: connection)
            _ = try await AccountStore.delete(id: account.id, now: now, on: connection)
        }
        logger.notice("account deleted", metadata: ["user_id": "\(account.id)"])
    }
}
