import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Postgres
import ServiceKit

/// Refresh, log out, and the list of the user's sessions.
struct SessionController: Sendable {
    let core: AuthCore

    func register(public routes: RouterGroup<AppRequestContext>, authenticated: RouterGroup<AuthenticatedContext>) {
        routes.post("refresh", use: refresh)
        routes.post("logout", use: logout)
        authenticated.get("sessions", use: list)
        authenticated.delete("sessions/:id", use: end)
    }

    enum RefreshOutcome: Sendable {
        case issued(Account, sessionID: UUID, refreshToken: String, issuedAt: Date)
        case invalid
        case reused(AuthenticatedUser)
    }

    /// Exchanges a refresh token for a new pair. The whole decision runs under the session's row lock, so two
    /// replicas refreshing the same token at once behave like one retry: the second gets the same pair.
    @Sendable func refresh(_ request: Request, context: AppRequestContext) async throws -> Response {
        let token = try await request.decodeJSON(as: RefreshRequest.self, context: context).refreshToken
        guard RefreshTokens.isWellFormed(token) else { throw Self.invalidRefreshToken }
        let policy = core.configuration.sessions
        let now = Date()
        let outcome = try await core.pool.withTransaction { connection -> RefreshOutcome in
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
                _ = try await SessionStore.end(sessionID: session.id, userID: session.userID, reason: .refreshTokenReused,
                                         now: now, on: connection)
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
        switch outcome {
        case .issued(let account, let sessionID, let refreshToken, let issuedAt):
            core.count(.refresh, "issued")
            let pair = try await core.issuer.pair(for: account, sessionID: sessionID, refreshToken: refreshToken,
                                                  issuedAt: issuedAt)
            return try ServiceJSON.encoder.encode(pair).jsonResponse(headers: AccountController.noStore)
        case .invalid:
            core.count(.refresh, "invalid")
            throw Self.invalidRefreshToken
        case .reused(let owner):
            core.count(.refresh, "reused")
            context.logger.warning("refresh token reused; session ended", metadata: [
                "user_id": "\(owner.userID)", "session_id": "\(owner.sessionID)",
            ])
            throw ServiceProblem(.unauthorized, .refreshTokenReused,
                                 "This refresh token was already used, so the session was ended; sign in again.")
        }
    }

    /// Ends this session (`scope=current`, the default), the user's other sessions (`others`) or all of them
    /// (`global`). The session is the one of the bearer token or, when there is no valid access token, of the live
    /// refresh token in the body (a retired one is refused). Ending a session that already ended is a success.
    @Sendable func logout(_ request: Request, context: AppRequestContext) async throws -> Response {
        let scopeText = request.uri.queryParameters["scope"].map(String.init) ?? LogoutScope.current.rawValue
        guard let scope = LogoutScope(rawValue: scopeText) else {
            let known = LogoutScope.allCases.map(\.rawValue).joined(separator: ", ")
            throw ServiceProblem.validation([FieldError(field: "scope", message: "must be one of \(known)")])
        }
        // A body, when sent, must be well-formed even when the bearer token decides: a client's mistake is refused,
        // never silently ignored.
        let bodyToken = request.headers[.contentType] == nil
            ? nil : try await request.decodeJSON(as: RefreshRequest.self, context: context).refreshToken
        let caller: AuthenticatedUser
        do {
            caller = try await AuthenticationMiddleware.authenticate(request, verifier: core.verifier)
        } catch is ServiceProblem where bodyToken != nil {
            // No usable access token (absent or expired): the refresh token in the body identifies the session, if a
            // refresh would accept it now (the live token, or the one it replaced within the grace window).
            let token = bodyToken ?? ""
            guard RefreshTokens.isWellFormed(token),
                  let owner = try await core.sessions.owner(ofTokenDigest: RefreshTokens.digest(token))
            else { throw Self.invalidRefreshToken }
            switch core.configuration.sessions.decide(presentedGeneration: owner.presentedGeneration,
                                                      state: owner.session, now: Date()) {
            case .rotate, .replay:
                caller = owner.user
            case .expired:
                // Already over: logging out again is a success, but an old token never ends *other* sessions.
                guard scope == .current else { throw Self.invalidRefreshToken }
                return Response(status: .noContent)
            case .reuse:
                // A retired copy (the holder may not be the owner): it ends nothing.
                throw Self.invalidRefreshToken
            }
        }
        let now = Date()
        _ = try await core.pool.withTransaction { connection in
            try await SessionStore.end(userID: caller.userID, scope: scope, current: caller.sessionID,
                                 reason: scope == .current ? .logout : .loggedOutElsewhere, now: now, on: connection)
        }
        return Response(status: .noContent)
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let sessions = try await core.sessions.live(userID: context.user.userID, current: context.user.sessionID,
                                                    now: Date())
        return try ServiceJSON.encoder.encode(SessionList(sessions: sessions))
            .conditionalJSONResponse(to: request, headers: AccountController.privateNoCache)
    }

    /// Ends one of the user's sessions. Another user's session id answers 404, exactly like an unknown one.
    @Sendable func end(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw ServiceProblem.validation([FieldError(field: "id", message: "must be a session id (UUID)")])
        }
        let user = context.user.userID
        let ended = try await core.pool.withTransaction { connection in
            try await SessionStore.end(sessionID: id, userID: user, reason: .endedFromSessionList, now: Date(),
                                 on: connection)
        }
        guard ended else { throw ServiceProblem(.notFound, .notFound, "You have no live session with this id.") }
        return Response(status: .noContent)
    }

    static let invalidRefreshToken = ServiceProblem(
        .unauthorized, .invalidRefreshToken, "The refresh token is not valid or its session has ended; sign in again."
    )
}
