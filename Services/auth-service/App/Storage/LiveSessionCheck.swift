import Foundation
import ServiceKit

/// auth-service's own revocation check: straight from the sessions table, so a logout is effective here at once.
struct LiveSessionCheck: SessionRevocations {
    let sessions: SessionStore

    func isRevoked(_ user: AuthenticatedUser) async throws -> Bool {
        try await !sessions.isLive(sessionID: user.sessionID, userID: user.userID, now: Date())
    }
}
