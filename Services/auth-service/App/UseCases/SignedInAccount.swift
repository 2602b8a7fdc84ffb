import Contracts
import Foundation
import HTTPTypes
import ServiceKit

/// The account of a verified token's user (`GET /v1/auth/me`, and what every change of the account starts from).
struct SignedInAccount: Sendable {
    let accounts: AccountStore

    func callAsFunction(_ user: AuthenticatedUser) async throws -> Account {
        guard let account = try await accounts.find(id: user.userID) else { throw Self.gone }
        return account
    }

    /// A verified token whose account no longer exists: only possible in the instant between a deletion and the
    /// revocation reaching this check.
    static let gone = ServiceProblem(.unauthorized, .invalidToken, "The account of this token no longer exists.",
                                     headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
}
