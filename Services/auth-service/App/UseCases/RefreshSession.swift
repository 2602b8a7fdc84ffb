import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit

/// `POST /v1/auth/refresh`: exchanges a refresh token for a new pair. The whole decision runs under the session's row
/// lock, so two replicas refreshing the same token at once behave like one retry: the second gets the same pair.
struct RefreshSession: Sendable {
    let pool: DatabasePool
    let issuer: TokenIssuer
    let policy: SessionPolicy
    let counters: AuthCounters

    private enum Outcome: Sendable {
        case issued(Account, sessionID: UUID, refreshToken: String, issuedAt: Date)
        case invalid
        case reused(AuthenticatedUser)
    }

    func callAsFunction(_ token: String, logger: Logger) async throws -> AuthSession {
        guard RefreshTokens.isWellFormed(token) else { throw AuthRefusal.invalidRefreshToken }
        switch try await decide(token, now: Date()) {
        case .issued(let account, let sessionID, let refreshToken, let issuedAt):
            counters.count(.refresh, "issued")
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

    /// ``SessionPolicy/decide(presentedGeneration:state:now:)`` on the locked session, and what it writes.
    private func decide(_ token: String, now: Date) async throws -> Outcome {
        try await pool.withTransaction { [policy] connection -> Outcome in
            guard let (session, presented) = try await SessionStore.lockSession(
                forTokenDigest: RefreshTokens.digest(token), on: connection
            ) else { return .invalid }
            switch policy.decide(presentedGeneration: presented, state: session.state, now: now) {
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
            case .replay:
                guard let nonce = session.rotationNonce, let rotatedAt = session.state.rotatedAt,
                      let account = try await AccountStore.find(id: session.userID, forUpdate: false, on: connection)
                else { return .invalid }
                return .issued(account, sessionID: session.id,
                               refreshToken: RefreshTokens.successor(of: token, nonce: nonce), issuedAt: rotatedAt)
            case .rotate:
                guard let account = try await AccountStore.find(id: session.userID, forUpdate: false, on: connection)
                else { return .invalid }
                let nonce = RandomBytes.data(count: 32)
                let next = RefreshTokens.successor(of: token, nonce: nonce)
                try await SessionStore.rotate(
                    session, nextDigest: RefreshTokens.digest(next), nonce: nonce, now: now,
                    idleExpiresAt: policy.idleExpiry(after: now, absoluteExpiry: session.absoluteExpiresAt),
                    on: connection
                )
                return .issued(account, sessionID: session.id, refreshToken: next, issuedAt: now)
            }
        }
    }
}
