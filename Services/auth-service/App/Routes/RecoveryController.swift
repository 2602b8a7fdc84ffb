import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// Account recovery over mail: asking for a password reset or a verification mail, and confirming either with the
/// token of its link.
struct RecoveryController: Sendable {
    let requestMail: RequestMail
    let followLink: FollowLink
    let signedInAccount: SignedInAccount
    let trustedProxies: TrustedProxies

    func register(public routes: RouterGroup<AppRequestContext>, authenticated: RouterGroup<AuthenticatedContext>) {
        routes.post("password-reset", use: askForReset)
        routes.post("password-reset/confirm", use: confirmReset)
        routes.post("email-verification/confirm", use: confirmEmail)
        authenticated.post("email-verification", use: askForVerification)
    }

    /// 202 with the same body whether or not an account has the address: the answer tells nobody which do.
    @Sendable func askForReset(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: PasswordResetRequest.self, context: context)
        let email = try EmailAddress.parse(body.email)
            .mapError { ServiceProblem.validation([FieldError(field: "email", message: $0.message)]) }.get()
        try await requestMail.passwordReset(
            for: email, clientAddress: trustedProxies.clientAddress(of: request, peer: context.remoteAddress?.ipAddress))
        return try Self.accepted(Self.resetAccepted)
    }

    @Sendable func confirmReset(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: PasswordResetConfirmation.self, context: context)
        try await followLink.resetPassword(token: body.token, to: body.newPassword)
        return .noContent
    }

    @Sendable func askForVerification(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let account = try await signedInAccount(context.user)
        try await requestMail.verification(
            for: account,
            clientAddress: trustedProxies.clientAddress(of: request, peer: context.remoteAddress?.ipAddress))
        return try Self.accepted(Self.verificationAccepted)
    }

    @Sendable func confirmEmail(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: EmailVerificationConfirmation.self, context: context)
        try await followLink.verifyEmail(token: body.token)
        return .noContent
    }

    private static func accepted(_ answer: MailRequestAccepted) throws -> Response {
        try ServiceJSON.encoder.encode(answer).jsonResponse(status: .accepted, headers: AccountController.noStore)
    }

    static let resetAccepted = MailRequestAccepted(
        detail: "If an account uses this address, a mail with a link to reset its password is on its way.")
    static let verificationAccepted = MailRequestAccepted(
        detail: "A mail with a link to confirm your address is on its way.")
}
