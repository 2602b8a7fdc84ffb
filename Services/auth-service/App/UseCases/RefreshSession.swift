import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit

/// `POST /v1/auth/refresh`: exchanges a refresh token for a new pair. The whole decision runs under the session's row
/// lock, so two replicas refreshing the same token at once behave like one retry: the second gets the same pair.
///
/// A client may send an `Idempotency-Key` with its refresh, kept (as a digest) with the generation it made. Retrying
/// the same token with the same key after the grace window (its answer lost while the app was suspended) gets the
/// same refresh token back, within ``SessionPolicy/retryWindow``; the same token without the key is reuse, as before.
struct RefreshSession: Sendable {
    let pool: DatabasePool
    let issuer: TokenIssuer
    let policy: SessionPolicy
    let counters: AuthCounters

    private enum Outcome: Sendable {
        /// `recovered`: a retry with the key of the refresh whose answer was lost.
        case issued(Account, sessionID: UUID, refreshToken: String, issuedAt: Date, recovered: Bool = false)
        case invalid
        case reused(AuthenticatedUser)
    }

    func callAsFunction(_ token: String, key: String?, logger: Logger) async throws -> AuthSession {
        guard RefreshTokens.isWellFormed(token) else { throw AuthRefusal.invalidRefreshToken }
        switch try await decide(token, key: key, now: Date()) {
        case .issued(let account, let sessionID, let refreshToken, let issuedAt, let recovered):
            counters.count(.refresh, recovered ? "recovered" : "issued")
            return try await issuer.pair(for: account, sessionID: sessionID, refreshToken: refreshToken,
                                         issuedAt: issuedAt)
        case .invalid:
            counters.count(.refresh, "invalid")
            throw AuthRefusal.invalidRefreshToken
        case .reused(let owner):
            counters.count(.refresh, "reused")
            logger.warning("refresh token reused; session ended", metadata: [
                "user_id": "\(owner.userID)", "session_id": "\(owner.sessionID)",
            ])
            throw AuthRefusal.refreshTokenReused
        }
    }

    /// ``SessionPolicy/decide(presentedGeneration:state:now:sameKey:)`` on the locked session, and what it writes.
    private func decide(_ token: String, key: String?, now: Date) async throws -> Outcome {
        try await pool.withTransaction { [policy] connection -> Outcome in
            guard let (session, presented) = try await SessionStore.lockSession(
                forTokenDigest: RefreshTokens.digest(token), on: connection
            ) else { return .invalid }
            // Scoped to the session: a key is only ever compared with the one kept for the same session.
            let scope = "refresh \(session.id.uuidString.lowercased())"
            let keyDigest = key.map { IdempotencyKey.digest($0, scope: scope) }
            let sameKey = keyDigest != nil && keyDigest == session.rotationKey
            let decision = policy.decide(presentedGeneration: presented, state: session.state, now: now,
                                         sameKey: sameKey)
            switch decision {
            case .expired:
                if !session.state.ended {
                    _ = try await SessionStore.end(sessionID: session.id, userID: session.userID, reason: .expired,
                                                   now: now, on: connection)
                }
                return .invalid
            case .reuse:
                _ = try await SessionStore.end(sessionID: session.id, userID: session.userID,
                                               reason: .refreshTokenReused, now: now, on: connection)
                return .reused(AuthenticatedUser(userID: session.userID, sessionID: session.id))
            case .replay, .recover:
                guard let nonce = session.rotationNonce, let rotatedAt = session.state.rotatedAt,
                      let account = try await AccountStore.find(id: session.userID, forUpdate: false, on: connection)
                else { return .invalid }
                // Within the grace window the very same pair; later, the access token of then has expired: a new one.
                let recovered = decision == .recover
                return .issued(account, sessionID: session.id,
                               refreshToken: RefreshTokens.successor(of: token, nonce: nonce),
                               issuedAt: recovered ? now : rotatedAt, recovered: recovered)
            case .rotate:
                guard let account = try await AccountStore.find(id: session.userID, forUpdate: false, on: connection)
                else { return .invalid }
                let nonce = RandomBytes.data(count: 32)
                let next = RefreshTokens.successor(of: token, nonce: nonce)
                try await SessionStore.rotate(
                    session, nextDigest: RefreshTokens.digest(next), nonce: nonce, key: keyDigest, now: now,
                    idleExpiresAt: policy.idleExpiry(after: now, absoluteExpiry: session.absoluteExpiresAt),
                    on: connection
                )
                return .issued(account, sessionID: session.id, refreshToken: next, issuedAt: now)
            }
        }
    }
}
