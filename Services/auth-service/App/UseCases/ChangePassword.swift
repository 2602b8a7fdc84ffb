import Contracts
import Foundation
import Postgres

/// `POST /v1/auth/me/password`, once the current password is re-confirmed: everything that proved the old password
/// ends with it (every other session, every device credential, a pending reset link); this session stays.
struct ChangePassword: Sendable {
    let passwords: PasswordCheck
    let accounts: AccountStore
    let hasher: PasswordHasher
    let pool: DatabasePool

    func callAsFunction(_ account: Account, to newPassword: String, confirmedBy currentPassword: String,
                        keeping session: UUID, idempotencyKey: String?, clientAddress: String) async throws {
        let changeKey = idempotencyKey.map {
            IdempotencyKey.digest($0, scope: "password \(account.id.uuidString.lowercased())")
        }
        do {
            try await passwords.confirm(currentPassword, of: account, clientAddress: clientAddress)
        } catch AuthRefusal.passwordNotConfirmed {
            // The retry of the change that set the current password (its answer was lost): the current password is
            // the new one by now. A success again, once the new password proves it; nothing changes, no session ends.
            guard let changeKey, try await accounts.passwordWasSet(id: account.id, byChangeWithKey: changeKey)
            else { throw AuthRefusal.passwordNotConfirmed }
            try await passwords.confirm(newPassword, of: account, clientAddress: clientAddress)
            return
        }
        let hash = try await hasher.hash(newPassword)
        let now = Date()
        try await pool.withTransaction { connection in
            try await AccountStore.updatePassword(id: account.id, hash: hash, changeKey: changeKey, now: now,
                                                  on: connection)
            try await SessionStore.end(userID: account.id, scope: .others, current: session, reason: .passwordChanged,
                                       now: now, on: connection)
            try await KnownDevices.forgetAll(of: account.id, on: connection)
            try await LinkTokens.delete(for: account.id, purpose: .passwordReset, on: connection)
        }
    }
}
