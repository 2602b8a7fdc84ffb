import Contracts
import Foundation
import ServiceKit

/// The account of a verified token's user (`GET /v1/auth/me`, and what every change of the account starts from).
struct SignedInAccount: Sendable {
    let accounts: AccountStore

    func callAsFunction(_ user: AuthenticatedUser) async throws -> Account {
        guard let account = try await accounts.find(id: user.userID) else { throw AuthRefusal.accountGone }
        return account
    }
}
