import Contracts
import Foundation
import JWTKit
import ServiceKit

/// Starts sessions and writes token pairs.
struct TokenIssuer: Sendable {
    let keys: SigningKeys
    let accessTokenLifetime: TimeInterval
    let sessions: SessionPolicy

    /// Who is signing in, as far as the session list shows it.
    struct Client: Sendable {
        var deviceName: String?
        var userAgent: String?
        var address: String
    }

    /// A session for `userID` starting at `now`, and the first refresh token for it.
    func newSession(userID: UUID, client: Client, now: Date) -> (session: NewSession, refreshToken: String) {
        let absolute = now.addingTimeInterval(sessions.absoluteLifetime)
        let session = NewSession(
            id: UUID.random(), userID: userID, deviceName: client.deviceName,
            userAgent: client.userAgent.map { String($0.prefix(256)) }, clientAddress: client.address,
            createdAt: now, idleExpiresAt: sessions.idleExpiry(after: now, absoluteExpiry: absolute),
            absoluteExpiresAt: absolute
        )
        return (session, RefreshTokens.generate())
    }

    /// The response body for a session: the user, a fresh access token issued at `issuedAt`, and `refreshToken`.
    ///
    /// Ed25519 signatures are deterministic, so the same session and `issuedAt` give the same access token: a
    /// refresh retried within the grace window gets exactly the pair the first attempt got.
    func pair(for account: Account, sessionID: UUID, refreshToken: String, issuedAt: Date) async throws -> AuthSession {
        let claims = AccessTokenClaims(
            user: AuthenticatedUser(userID: account.id, sessionID: sessionID, emailVerified: account.emailVerified),
            issuedAt: issuedAt,
            lifetime: accessTokenLifetime, policy: .standard
        )
        let token = try await keys.sign(claims)
        let remaining = claims.expiration.value.timeIntervalSinceNow
        return AuthSession(user: account.profile, accessToken: token, refreshToken: refreshToken,
                           expiresIn: max(0, Int(remaining.rounded(.down))), sessionId: sessionID)
    }
}
