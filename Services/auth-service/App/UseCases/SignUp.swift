import Contracts
import Foundation
import Postgres
import ServiceKit

/// `POST /v1/auth/signup`: a new account and its first session, in one transaction.
struct SignUp: Sendable {
    let accounts: AccountStore
    let hasher: PasswordHasher
    let issuer: TokenIssuer
    let pool: DatabasePool
    /// Answers a retried sign-up whose account exists.
    let signIn: SignIn

    func callAsFunction(email: EmailAddress, password: String, experience: ExperienceID, client: TokenIssuer.Client,
                        idempotencyKey: String?) async throws -> AuthSession {
        let signUpKey = idempotencyKey.map { IdempotencyKey.digest($0, scope: "signup \(email.value)") }
        let hash = try await hasher.hash(password)
        let now = Date()
        let account = Account(id: UUID.random(), email: email.value, passwordHash: hash, experience: experience,
                              preferences: [:], createdAt: now)
        let (session, refreshToken) = issuer.newSession(userID: account.id, client: client, now: now)
        let deviceCredential: String
        do {
            deviceCredential = try await pool.withTransaction { connection in
                try await AccountStore.insert(account, signUpKey: signUpKey, on: connection)
                try await MailOutbox.enqueue(.emailVerification, to: account.email, now: now, on: connection)
                try await SessionStore.create(session, firstTokenDigest: RefreshTokens.digest(refreshToken), on: connection)
                return try await KnownDevices.issue(for: account.id, now: now, on: connection)
            }
        } catch AccountError.emailTaken {
            // The retry of the sign-up that created this account (its answer was lost): answered as that one was, 201
            // and a token pair (of a new session), once the password proves it is the same person. Anything else is
            // someone else's email.
            if let signUpKey, try await accounts.wasCreated(email: email, bySignUpWithKey: signUpKey) {
                do {
                    return try await signIn(email: email, password: password, client: client)
                } catch AuthRefusal.invalidCredentials {}
            }
            throw AuthRefusal.emailTaken
        }
        var pair = try await issuer.pair(for: account, sessionID: session.id, refreshToken: refreshToken, issuedAt: now)
        pair.deviceCredential = deviceCredential
        return pair
    }
}
