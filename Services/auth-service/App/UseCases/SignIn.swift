import Contracts
import Foundation
import HTTPTypes
import Postgres
import ServiceKit

/// `POST /v1/auth/login`: one throttled password check, then a new session and its token pair. Unknown email and
/// wrong password take the same path (one verification, the failure counted before it stays) and get the same
/// answer: nothing in the response or its timing tells them apart.
struct SignIn: Sendable {
    let passwords: PasswordCheck
    let issuer: TokenIssuer
    let pool: DatabasePool
    let counters: AuthCounters

    func callAsFunction(email: EmailAddress, password: String, client: TokenIssuer.Client) async throws -> AuthSession {
        let now = Date()
        guard let account = try await passwords.account(email, password: password, clientAddress: client.address,
                                                        now: now)
        else {
            counters.count(.signIn, "invalid-credentials")
            throw Self.invalidCredentials
        }
        counters.count(.signIn, "success")
        let (session, refreshToken) = issuer.newSession(userID: account.id, client: client, now: now)
        try await pool.withTransaction { connection in
            try await SessionStore.create(session, firstTokenDigest: RefreshTokens.digest(refreshToken), on: connection)
        }
        return try await issuer.pair(for: account, sessionID: session.id, refreshToken: refreshToken, issuedAt: now)
    }

    static let invalidCredentials = ServiceProblem(
        .unauthorized, .invalidCredentials, "The email or the password is not correct."
    )
}
