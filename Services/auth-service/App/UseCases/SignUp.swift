import Contracts
import Foundation
import Postgres
import ServiceKit

/// `POST /v1/auth/signup`: a new account and its first session, in one transaction.
///
/// Every sign-up costs a bcrypt hash, so each counts against its client's hourly limit first (taken email or not,
/// retry or not: the limit also bounds how fast sign-up's 409 can be used to test which addresses have accounts),
/// and a taken email costs the same one hash as a new one. The verification mail counts against the mail limits of
/// ``RequestMail``: signing up, deleting and signing up again sends no more mail than asking for it.
struct SignUp: Sendable {
    let accounts: AccountStore
    let hasher: PasswordHasher
    let issuer: TokenIssuer
    let pool: DatabasePool
    let throttle: ThrottleStore
    let limit: RequestLimit
    let mail: RequestMail
    /// Answers a retried sign-up whose account exists.
    let signIn: SignIn

    func callAsFunction(email: EmailAddress, password: String, experience: ExperienceID, client: TokenIssuer.Client,
                        idempotencyKey: String?) async throws -> AuthSession {
        try hasher.requireRoomForNewHash()
        if let wait = try await throttle.admit(ThrottleKey.forSignUp(clientAddress: client.address, limit: limit),
                                               now: Date()) {
            throw AuthRefusal.signUpThrottled(retryAfter: wait)
        }
        let signUpKey = idempotencyKey.map { IdempotencyKey.digest($0, scope: "signup \(email.value)") }
        let hash = try await hasher.hash(password)
        // Counted before the account exists: over the limit, the account is made and no mail is queued (the user
        // asks for one later, from the app).
        let mailAdmitted = (try? await mail.admit(email.value, clientAddress: client.address)) != nil
        let now = Date()
        let account = Account(id: UUID.random(), email: email.value, passwordHash: hash, experience: experience,
                              preferences: [:], createdAt: now)
        let (session, refreshToken) = issuer.newSession(userID: account.id, client: client, now: now)
        let deviceCredential: String
        do {
            deviceCredential = try await pool.withTransaction { connection in
                try await AccountStore.insert(account, signUpKey: signUpKey, on: connection)
                if mailAdmitted {
                    try await MailOutbox.enqueue(.emailVerification, to: account.email, now: now, on: connection)
                }
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
