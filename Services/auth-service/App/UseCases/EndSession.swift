import Contracts
import Foundation
import Postgres

/// `DELETE /v1/auth/sessions/{id}`: ends one of the user's sessions. Another user's session id answers 404, exactly
/// like an unknown one.
struct EndSession: Sendable {
    let pool: DatabasePool

    func callAsFunction(_ id: UUID, of userID: UUID) async throws {
        let ended = try await pool.withTransaction { connection in
            try await SessionStore.end(sessionID: id, userID: userID, reason: .endedFromSessionList, now: Date(),
                                       on: connection)
        }
        guard ended else { throw AuthRefusal.noSuchSession }
    }
}
