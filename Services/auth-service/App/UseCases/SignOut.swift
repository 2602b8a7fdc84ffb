import Contracts
import Foundation
import Postgres
import ServiceKit

/// `POST /v1/auth/logout`: ends this session (`scope=current`), the user's other sessions (`others`) or all of them
/// (`global`). Ending a session that already ended is a success.
struct SignOut: Sendable {
    let sessions: SessionStore
    let policy: SessionPolicy

    /// Relative to `caller`, the session of the bearer token.
    func callAsFunction(_ caller: AuthenticatedUser, scope: LogoutScope) async throws {
        let now = Date()
        try await sessions.pool.withTransaction { connection in
            try await SessionStore.end(userID: caller.userID, scope: scope, current: caller.sessionID,
                                       reason: scope == .current ? .logout : .loggedOutElsewhere, now: now,
                                       on: connection)
            // Everywhere means every device too: none signs in again on the throttle of a known device.
            if scope == .global { try await KnownDevices.forgetAll(of: caller.userID, on: connection) }
        }
    }

    /// Relative to the session of `refreshToken`, when there is no usable access token (absent or expired): if a
    /// refresh would accept the token now (the live token, or the one it replaced within the grace window).
    func callAsFunction(refreshToken token: String, scope: LogoutScope) async throws {
        guard RefreshTokens.isWellFormed(token),
              let owner = try await sessions.owner(ofTokenDigest: RefreshTokens.digest(token))
        else { throw AuthRefusal.invalidRefreshToken }
        switch policy.decide(presentedGeneration: owner.presentedGeneration, state: owner.session, now: Date()) {
        case .rotate, .replay, .recover:  // (no key is sent with a logout: never .recover)
            try await self(owner.user, scope: scope)
        case .expired:
            // Already over: logging out again is a success, but an old token never ends *other* sessions.
            guard scope == .current else { throw AuthRefusal.invalidRefreshToken }
        case .reuse:
            // A retired copy (the holder may not be the owner): it ends nothing.
            throw AuthRefusal.invalidRefreshToken
        }
    }
}
