import Contracts
import Foundation
import Postgres

/// `POST /v1/auth/login`: one throttled password check, then a new session and its token pair. Unknown email and
/// wrong password take the same path (one verification, the failure counted before it stays) and get the same
/// answer: nothing in the response or its timing tells them apart. A device that did not present a valid device
/// credential for the account gets one with its session, to send with its later sign-ins.
struct SignIn: Sendable {
    let passwords: PasswordCheck
    let issuer: TokenIssuer
    let pool: DatabasePool
    let counters: AuthCounters

    func callAsFunction(email: EmailAddress, password: String, deviceCredential: String? = nil,
                        client: TokenIssuer.Client) async throws -> AuthSession {
        let now = Date()
        guard let passed = try await passwords.account(email, password: password, clientAddress: client.address,
                                                       deviceCredential: deviceCredential, now: now)
        else {
            counters.count(.signIn, "invalid-credentials")
            throw AuthRefusal.invalidCredentials
        }
        counters.count(.signIn, passed.fromKnownDevice ? "success-known-device" : "success")
        let account = passed.account
        let (session, refreshToken) = issuer.newSession(userID: account.id, client: client, now: now)
        let newCredential = try await pool.withTransaction { connection in
            try await SessionStore.create(session, firstTokenDigest: RefreshTokens.digest(refreshToken), on: connection)
            return passed.fromKnownDevice ? nil : try await KnownDevices.issue(for: account.id, now: now, on: connection)
        }
        var pair = try await issuer.pair(for: account, sessionID: session.id, refreshToken: refreshToken, issuedAt: now)
        pair.deviceCredential = newCredential
        return pair
    }
}
