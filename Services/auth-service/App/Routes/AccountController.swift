import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// Sign up, sign in, and the signed-in user's own account (`/v1/auth/me`).
struct AccountController: Sendable {
    let signUp: SignUp
    let signIn: SignIn
    let signedInAccount: SignedInAccount
    let updateProfile: UpdateProfile
    let changePassword: ChangePassword
    let deleteAccount: DeleteAccount
    let trustedProxies: TrustedProxies

    func register(public routes: RouterGroup<AppRequestContext>, authenticated: RouterGroup<AuthenticatedContext>) {
        routes.post("signup", use: createAccount)
        routes.post("login", use: login)
        authenticated.get("me", use: me)
        authenticated.patch("me", use: updateMe)
        authenticated.delete("me", use: deleteMe)
        authenticated.post("me/password", use: changeMyPassword)
    }

    @Sendable func createAccount(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: SignUpRequest.self, context: context)
        var errors: [FieldError] = []
        let email = Self.email(body.email, errors: &errors)
        if let problem = PasswordPolicy.problem(with: body.password, email: email) {
            errors.append(FieldError(field: "password", message: problem))
        }
        let experience = ExperienceID(rawValue: body.experience)
        if Experience.named(experience) == nil {
            let known = Experience.all.map(\.id.rawValue).joined(separator: ", ")
            errors.append(FieldError(field: "experience", message: "must be one of \(known)"))
        }
        errors += Self.deviceNameErrors(body.deviceName)
        guard let email, errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let pair = try await signUp(
            email: email, password: body.password, experience: experience,
            client: client(of: request, peer: context.remoteAddress?.ipAddress, deviceName: body.deviceName),
            idempotencyKey: try request.idempotencyKey()
        )
        return try ServiceJSON.encoder.encode(pair).jsonResponse(status: .created, headers: Self.noStore)
    }

    @Sendable func login(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: SignInRequest.self, context: context)
        var errors = Self.deviceNameErrors(body.deviceName)
        let email = Self.email(body.email, errors: &errors)
        if let problem = PasswordPolicy.signInProblem(with: body.password) {
            errors.append(FieldError(field: "password", message: problem))
        }
        guard let email, errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let pair = try await signIn(
            email: email, password: body.password, deviceCredential: body.deviceCredential,
            client: client(of: request, peer: context.remoteAddress?.ipAddress, deviceName: body.deviceName)
        )
        return try ServiceJSON.encoder.encode(pair).jsonResponse(headers: Self.noStore)
    }

    @Sendable func me(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let account = try await signedInAccount(context.user)
        return try ServiceJSON.encoder.encode(account.profile)
            .conditionalJSONResponse(to: request, headers: Self.noStore)
    }

    /// Only the experience, preferences and display name change here; any other field is refused with 400, so a
    /// client never believes it changed, say, the email.
    @Sendable func updateMe(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let update = try await request.decodeJSON(as: ProfileUpdate.self, context: context,
                                                  allowedKeys: ["experience", "preferences", "displayName"])
        var errors: [FieldError] = []
        let experience = update.experience.map(ExperienceID.init(rawValue:))
        if let experience, Experience.named(experience) == nil {
            let known = Experience.all.map(\.id.rawValue).joined(separator: ", ")
            errors.append(FieldError(field: "experience", message: "must be one of \(known)"))
        }
        var displayName: String??
        switch update.displayName.map(DisplayName.checked) {
        case .set(let name)?: displayName = .some(name)
        case .removed?: displayName = .some(nil)
        case .refused(let error)?: errors.append(error)
        case nil: break
        }
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let call = UpdateProfile.CatalogCall(bearer: AuthenticationMiddleware.bearerToken(in: request) ?? "",
                                             requestID: context.requestID, logger: context.logger)
        let updated = try await updateProfile(context.user, experience: experience, preferences: update.preferences,
                                              displayName: displayName, call: call)
        return try ServiceJSON.encoder.encode(updated.profile).jsonResponse(headers: Self.noStore)
    }

    @Sendable func deleteMe(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await request.decodeJSON(as: AccountDeletion.self, context: context)
        let account = try await signedInAccount(context.user)
        try await deleteAccount(account, confirmedBy: body.password,
                                clientAddress: trustedProxies.clientAddress(of: request, peer: context.remoteAddress?.ipAddress),
                                logger: context.logger)
        return .noContent
    }

    /// 204, also to the retry of a change whose answer was lost (same `Idempotency-Key`).
    @Sendable func changeMyPassword(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await request.decodeJSON(as: PasswordChange.self, context: context)
        let account = try await signedInAccount(context.user)
        if let problem = PasswordPolicy.problem(with: body.newPassword,
                                                email: EmailAddress(stored: account.email)) {
            throw ServiceProblem.validation([FieldError(field: "newPassword", message: problem)])
        }
        try await changePassword(
            account, to: body.newPassword, confirmedBy: body.currentPassword, keeping: context.user.sessionID,
            idempotencyKey: try request.idempotencyKey(),
            clientAddress: trustedProxies.clientAddress(of: request, peer: context.remoteAddress?.ipAddress)
        )
        return .noContent
    }

    // MARK: Input

    /// The client as the session list and the throttle see it. A device name was checked by ``deviceNameErrors(_:)``.
    private func client(of request: Request, peer: String?, deviceName: String?) -> TokenIssuer.Client {
        TokenIssuer.Client(deviceName: deviceName.map { UserText.normalized($0.trimmingCharacters(in: .whitespacesAndNewlines)) },
                           userAgent: request.headers[.userAgent],
                           address: trustedProxies.clientAddress(of: request, peer: peer))
    }

    /// The address in `raw`, or nil with its refusal added to `errors`.
    static func email(_ raw: String, errors: inout [FieldError]) -> EmailAddress? {
        switch EmailAddress.parse(raw) {
        case .success(let email): return email
        case .failure(let refusal):
            errors.append(FieldError(field: "email", message: refusal.message))
            return nil
        }
    }

    static func deviceNameErrors(_ name: String?) -> [FieldError] {
        guard let name else { return [] }
        switch UserText.accepted(name, maximumCharacters: maximumDeviceNameLength, maximumBytes: maximumDeviceNameBytes) {
        case .success(let accepted) where accepted.isEmpty:
            return [FieldError(field: "deviceName", message: "must be 1 to \(maximumDeviceNameLength) characters")]
        case .success:
            return []
        case .failure(let refusal):
            return [FieldError(field: "deviceName", message: refusal.message)]
        }
    }

    static let maximumDeviceNameLength = 100
    static let maximumDeviceNameBytes = 400

    /// For everything personal (tokens, the profile, the session list): no cache on the way or on the device keeps a
    /// copy. An `ETag` still saves a client that asks with `If-None-Match` the body.
    static let noStore: HTTPFields = [.cacheControl: "no-store"]
}

extension TrustedProxies {
    /// The gateway's `X-Real-IP` only when the TCP peer is a trusted proxy.
    func clientAddress(of request: Request, peer: String?) -> String {
        clientAddress(peer: peer, forwarded: request.headers[.realIP])
    }
}

extension HTTPField.Name {
    /// The client address the gateway puts on every request (overwriting whatever the client sent).
    static let realIP = HTTPField.Name("X-Real-IP")!
}
