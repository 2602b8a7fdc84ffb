import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// Refresh, log out, and the list of the user's sessions.
struct SessionController: Sendable {
    let refreshSession: RefreshSession
    let signOut: SignOut
    let endSession: EndSession
    let sessions: SessionStore
    /// The logout route is public (an expired access token must not stop a logout), so it checks a bearer itself.
    let verifier: AccessTokenVerifier

    func register(public routes: RouterGroup<AppRequestContext>, authenticated: RouterGroup<AuthenticatedContext>) {
        routes.post("refresh", use: refresh)
        routes.post("logout", use: logout)
        authenticated.get("sessions", use: list)
        authenticated.delete("sessions/:id", use: end)
    }

    @Sendable func refresh(_ request: Request, context: AppRequestContext) async throws -> Response {
        let token = try await request.decodeJSON(as: RefreshRequest.self, context: context).refreshToken
        let pair = try await refreshSession(token, key: try request.idempotencyKey(), logger: context.logger)
        return try ServiceJSON.encoder.encode(pair).jsonResponse(headers: AccountController.noStore)
    }

    /// The session is the one of the bearer token or, when there is no valid access token, of the live refresh token
    /// in the body (a retired one is refused).
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
            caller = try await AuthenticationMiddleware.authenticate(request, verifier: verifier)
        } catch is ServiceProblem where bodyToken != nil {
            try await signOut(refreshToken: bodyToken ?? "", scope: scope)
            return .noContent
        }
        try await signOut(caller, scope: scope)
        return .noContent
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let live = try await sessions.live(userID: context.user.userID, current: context.user.sessionID, now: Date())
        return try ServiceJSON.encoder.encode(SessionList(sessions: live))
            .conditionalJSONResponse(to: request, headers: AccountController.noStore)
    }

    @Sendable func end(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw ServiceProblem.validation([FieldError(field: "id", message: "must be a session id (UUID)")])
        }
        try await endSession(id, of: context.user.userID)
        return .noContent
    }
}
