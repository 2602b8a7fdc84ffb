import Contracts
import Foundation
import HTTPTypes
import Hummingbird

/// Requires `Authorization: Bearer <access token>` on the routes of the group it is added to, and hands the verified
/// user to ``AuthenticatedContext``. Every failure is a 401 problem with a `WWW-Authenticate` challenge (RFC 6750):
/// `token-expired` for a genuine token past its expiry (the client refreshes and retries), `invalid-token` for every
/// other refusal. With `requireVerifiedEmail`, a token whose account's email is not verified is refused with 403
/// `email-unverified` (a token from before the claim existed passes: it expires within minutes).
public struct AuthenticationMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext

    let verifier: AccessTokenVerifier
    let requireVerifiedEmail: Bool

    public init(verifier: AccessTokenVerifier, requireVerifiedEmail: Bool = false) {
        self.verifier = verifier
        self.requireVerifiedEmail = requireVerifiedEmail
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        let user = try await Self.authenticate(request, verifier: verifier)
        if requireVerifiedEmail, user.emailVerified == false { throw Self.unverifiedEmail }
        context.identity = user
        return try await next(request, context)
    }

    /// The caller of `request`; throws 401 problems. Also used by routes that accept a token without requiring one.
    public static func authenticate(_ request: Request, verifier: AccessTokenVerifier) async throws -> AuthenticatedUser {
        guard let token = bearerToken(in: request) else { throw missingToken }
        do {
            return try await verifier.verify(token)
        } catch let rejection as TokenRejection {
            throw refusal(rejection)
        }
    }

    /// The 401 problem for a refused token. Only a token with a valid signature reaches the expiry check, so
    /// `token-expired` tells a forger nothing.
    public static func refusal(_ rejection: TokenRejection) -> ServiceProblem {
        ServiceProblem(
            .unauthorized, rejection == .expired ? .tokenExpired : .invalidToken, rejection.description,
            headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#]
        )
    }

    /// The token of an `Authorization: Bearer …` header, if the request has one.
    public static func bearerToken(in request: Request) -> String? {
        request.headers[.authorization].flatMap(bearerToken(fromHeader:))
    }

    /// The token of an `Authorization` header value `Bearer …` (scheme in any letter case), if it is one.
    static func bearerToken(fromHeader value: String) -> String? {
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // Swift's own trimming: Foundation's goes through NSString, a twentieth of a cheap request's CPU.
        var token = parts[1]
        while token.first?.isWhitespace == true { token.removeFirst() }
        while token.last?.isWhitespace == true { token.removeLast() }
        return token.isEmpty ? nil : String(token)
    }

    static let unverifiedEmail = ServiceProblem(
        .forbidden, .emailUnverified,
        "Verify your email first: follow the link in the mail we sent (or ask for a new one), then refresh the token."
    )

    static let missingToken = ServiceProblem(
        .unauthorized, .authenticationRequired, "Send an access token as Authorization: Bearer <token>.",
        headers: [.wwwAuthenticate: "Bearer"]
    )
}
