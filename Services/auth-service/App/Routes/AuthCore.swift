import Contracts
import CoreMetrics
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Postgres
import ServiceKit

/// What the controllers share: stores, the password hasher, the token issuer and the settings.
struct AuthCore: Sendable {
    let configuration: AuthConfiguration
    let pool: DatabasePool
    let accounts: AccountStore
    let sessions: SessionStore
    let throttle: ThrottleStore
    let hasher: PasswordHasher
    let issuer: TokenIssuer
    let verifier: AccessTokenVerifier
    let metrics: any MetricsFactory

    /// Counts an outcome of a sign-in (`auth_sign_ins_total`) or a refresh (`auth_refreshes_total`): the figures an
    /// operator watches for credential stuffing (failures, throttling) and stolen tokens (reuse).
    func count(_ event: AuthEvent, _ outcome: String) {
        Counter(label: event.rawValue, dimensions: [("outcome", outcome)], factory: metrics).increment()
    }

    enum AuthEvent: String {
        case signIn = "auth_sign_ins_total", refresh = "auth_refreshes_total"
    }

    /// The client as the session list and the throttle see it. The address is the gateway's `X-Real-IP` only when
    /// the TCP peer is a trusted proxy.
    func client(of request: Request, peer: String?, deviceName: String?) -> TokenIssuer.Client {
        TokenIssuer.Client(
            deviceName: deviceName,
            userAgent: request.headers[.userAgent],
            address: configuration.trustedProxies.clientAddress(peer: peer, forwarded: request.headers[.realIP])
        )
    }

    /// Counts a password check against `keys` before it runs (see ``ThrottleStore/beginAttempt(_:now:)``), or refuses
    /// with 429 when any of them is blocked, before any password is looked at.
    func beginPasswordAttempt(_ keys: [ThrottleKey], now: Date) async throws -> ThrottleStore.Attempt {
        switch try await throttle.beginAttempt(keys, now: now) {
        case .counted(let attempt):
            return attempt
        case .blocked(let wait):
            count(.signIn, "throttled")
            let seconds = Int(wait.rounded(.up))
            throw ServiceProblem(.tooManyRequests, .signInThrottled,
                                 "Too many failed attempts; try again in \(seconds) seconds.",
                                 headers: [.retryAfter: String(seconds)])
        }
    }

    /// Signs in with `email` and `password`: one throttled bcrypt check, then a new session and its token pair.
    /// Unknown email and wrong password take the same path (one verification, the failure counted before it stays)
    /// and get the same answer: nothing in the response or its timing tells them apart.
    func signIn(email: EmailAddress, password: String, client: TokenIssuer.Client) async throws -> AuthSession {
        let throttleKeys = ThrottleKey.forSignIn(email: email, clientAddress: client.address)
        let now = Date()
        let attempt = try await beginPasswordAttempt(throttleKeys, now: now)
        let account = try await accounts.find(email: email)
        guard try await hasher.verify(password, against: account?.passwordHash), let account else {
            count(.signIn, "invalid-credentials")
            throw Self.invalidCredentials
        }
        try await throttle.attemptSucceeded(attempt, keys: throttleKeys, now: now)
        count(.signIn, "success")
        let (session, refreshToken) = issuer.newSession(userID: account.id, client: client, now: now)
        try await pool.withTransaction { connection in
            try await SessionStore.create(session, firstTokenDigest: RefreshTokens.digest(refreshToken), on: connection)
        }
        return try await issuer.pair(for: account, sessionID: session.id, refreshToken: refreshToken, issuedAt: now)
    }

    /// The digest an `Idempotency-Key` is stored as: SHA-256 of the request's scope (what else names the request,
    /// so the same key on another request is not mistaken for a retry of it) and the key.
    static func digest(idempotencyKey key: String, scope: String) -> Data {
        Data(SHA256.hash(data: Data("\(scope) \(key)".utf8)))
    }

    /// Checks the password of a signed-in user who re-confirms it (deleting the account, changing the password).
    /// Failures count against the same throttle as sign-ins: a stolen access token must not become a guessing oracle.
    func confirmPassword(_ password: String, of account: Account, client: TokenIssuer.Client) async throws {
        let keys = ThrottleKey.forSignIn(email: EmailAddress(normalizing: account.email)!, clientAddress: client.address)
        let now = Date()
        let attempt = try await beginPasswordAttempt(keys, now: now)
        guard try await hasher.verify(password, against: account.passwordHash) else {
            throw ServiceProblem(.forbidden, .passwordConfirmationFailed, "The password is not correct.")
        }
        try await throttle.attemptSucceeded(attempt, keys: keys, now: now)
    }

    static let invalidCredentials = ServiceProblem(
        .unauthorized, .invalidCredentials, "The email or the password is not correct."
    )
}

extension HTTPField.Name {
    /// The client address the gateway puts on every request (overwriting whatever the client sent).
    static let realIP = HTTPField.Name("X-Real-IP")!
}

extension AppRequestContext {
    /// The TCP peer's address as text.
    var peerAddress: String? { remoteAddress?.ipAddress }
}

extension AuthenticatedContext {
    var peerAddress: String? { remoteAddress?.ipAddress }
}
