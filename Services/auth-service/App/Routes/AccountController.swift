import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Postgres
import ServiceKit

/// Sign up, sign in, and the signed-in user's own account (`/v1/auth/me`).
struct AccountController: Sendable {
    let core: AuthCore
    let categories: CatalogCategories

    /// The preference that names one of the experience's categories (the list the app opens on), checked against the
    /// catalog's categories.
    static let defaultCategoryKey = "defaultCategory"

    func register(public routes: RouterGroup<AppRequestContext>, authenticated: RouterGroup<AuthenticatedContext>) {
        routes.post("signup", use: signUp)
        routes.post("login", use: signIn)
        authenticated.get("me", use: me)
        authenticated.patch("me", use: updateMe)
        authenticated.delete("me", use: deleteMe)
        authenticated.post("me/password", use: changePassword)
    }

    @Sendable func signUp(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: SignUpRequest.self, context: context)
        var errors: [FieldError] = []
        let email = EmailAddress(normalizing: body.email)
        if email == nil { errors.append(FieldError(field: "email", message: EmailAddress.invalidMessage)) }
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
        let signUpKey = try request.idempotencyKey().map {
            AuthCore.digest(idempotencyKey: $0, scope: "signup \(email.value)")
        }

        let hash = try await core.hasher.hash(body.password)
        let now = Date()
        let account = Account(id: UUID.random(), email: email.value, passwordHash: hash, experience: experience,
                              preferences: [:], createdAt: now)
        let client = core.client(of: request, peer: context.peerAddress, deviceName: body.deviceName)
        let (session, refreshToken) = core.issuer.newSession(userID: account.id, client: client, now: now)
        do {
            try await core.pool.withTransaction { connection in
                try await AccountStore.insert(account, signUpKey: signUpKey, on: connection)
                try await SessionStore.create(session, firstTokenDigest: RefreshTokens.digest(refreshToken), on: connection)
            }
        } catch AccountError.emailTaken {
            // The retry of the sign-up that created this account (its answer was lost): answered as that one was, 201
            // and a token pair (of a new session), once the password proves it is the same person. Anything else is
            // someone else's email.
            if let signUpKey, try await core.accounts.wasCreated(email: email, bySignUpWithKey: signUpKey) {
                do {
                    let pair = try await core.signIn(email: email, password: body.password, client: client)
                    return try ServiceJSON.encoder.encode(pair).jsonResponse(status: .created, headers: Self.noStore)
                } catch let refusal as ServiceProblem where refusal.type == .invalidCredentials {}
            }
            throw ServiceProblem(.conflict, .emailTaken, "An account with this email already exists; sign in instead.")
        }
        let pair = try await core.issuer.pair(for: account, sessionID: session.id, refreshToken: refreshToken,
                                              issuedAt: now)
        return try ServiceJSON.encoder.encode(pair).jsonResponse(status: .created, headers: Self.noStore)
    }

    @Sendable func signIn(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: SignInRequest.self, context: context)
        var errors = Self.deviceNameErrors(body.deviceName)
        let email = EmailAddress(normalizing: body.email)
        if email == nil { errors.append(FieldError(field: "email", message: EmailAddress.invalidMessage)) }
        if body.password.isEmpty || body.password.count > PasswordPolicy.maximumLength {
            errors.append(FieldError(field: "password",
                                     message: "must be 1 to \(PasswordPolicy.maximumLength) characters"))
        }
        guard let email, errors.isEmpty else { throw ServiceProblem.validation(errors) }

        let client = core.client(of: request, peer: context.peerAddress, deviceName: body.deviceName)
        let pair = try await core.signIn(email: email, password: body.password, client: client)
        return try ServiceJSON.encoder.encode(pair).jsonResponse(headers: Self.noStore)
    }

    @Sendable func me(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let account = try await account(of: context)
        return try ServiceJSON.encoder.encode(account.profile)
            .conditionalJSONResponse(to: request, headers: Self.privateNoCache)
    }

    /// Only the experience and preferences change here; any other field is refused with 400, so a client never
    /// believes it changed, say, the email.
    @Sendable func updateMe(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let update = try await request.decodeJSON(as: ProfileUpdate.self, context: context,
                                                  allowedKeys: ["experience", "preferences"])
        let experience = update.experience.map(ExperienceID.init(rawValue:))
        if let experience {
            guard Experience.named(experience) != nil else {
                let known = Experience.all.map(\.id.rawValue).joined(separator: ", ")
                throw ServiceProblem.validation([FieldError(field: "experience", message: "must be one of \(known)")])
            }
        }
        let userID = context.user.userID
        let patch = update.preferences
        if let category = patch?[Self.defaultCategoryKey] ?? nil {
            try await checkCategory(category, experience: experience, request: request, context: context)
        }
        let updated = try await core.pool.withTransaction { connection -> Account? in
            guard let current = try await AccountStore.find(id: userID, forUpdate: true, on: connection) else { return nil }
            var preferences: [String: String]?
            if let patch {
                switch Preferences.merge(patch, into: current.preferences) {
                case .success(let merged): preferences = merged
                case .failure(let problems): throw ServiceProblem.validation(problems.errors)
                }
            }
            return try await AccountStore.update(id: userID, experience: experience, preferences: preferences, now: Date(),
                                           on: connection)
        }
        guard let updated else { throw Self.accountGone }
        return try ServiceJSON.encoder.encode(updated.profile).jsonResponse(headers: Self.noStore)
    }

    /// A default category must be one of the categories of the account's experience (the one this request sets, or
    /// the current one), as the catalog lists them now.
    private func checkCategory(_ category: String, experience: ExperienceID?, request: Request,
                               context: AuthenticatedContext) async throws {
        let field = "preferences.\(Self.defaultCategoryKey)"
        let target: ExperienceID
        if let experience { target = experience } else { target = try await account(of: context).experience }
        guard let known = try await categories.contains(
            category, in: target, bearer: AuthenticationMiddleware.bearerToken(in: request) ?? "",
            requestID: context.requestID, logger: context.logger)
        else {
            throw ServiceProblem.validation([FieldError(field: field, message: "\(target) has no categories")])
        }
        guard known else {
            throw ServiceProblem.validation([FieldError(
                field: field, message: "\"\(category.prefix(80))\" is not one of GET /v1/catalog/\(target)/categories")])
        }
    }

    /// Deletes the account after the password is re-confirmed; every session ends and is listed as revoked first,
    /// so its access tokens stop working in every service.
    @Sendable func deleteMe(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await request.decodeJSON(as: AccountDeletion.self, context: context)
        let account = try await account(of: context)
        try await core.confirmPassword(body.password, of: account,
                                       client: core.client(of: request, peer: context.peerAddress, deviceName: nil))
        let now = Date()
        try await core.pool.withTransaction { connection in
            try await SessionStore.end(userID: account.id, scope: .global, current: nil, reason: .accountDeleted, now: now,
                                 on: connection)
            _ = try await AccountStore.delete(id: account.id, now: now, on: connection)
        }
        context.logger.notice("account deleted", metadata: ["user_id": "\(account.id)"])
        return Response(status: .noContent)
    }

    /// Changes the password; every other session ends (whoever knew the old password is signed out), this one stays.
    @Sendable func changePassword(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await request.decodeJSON(as: PasswordChange.self, context: context)
        let account = try await account(of: context)
        if let problem = PasswordPolicy.problem(with: body.newPassword,
                                                email: EmailAddress(normalizing: account.email)) {
            throw ServiceProblem.validation([FieldError(field: "newPassword", message: problem)])
        }
        let changeKey = try request.idempotencyKey().map {
            AuthCore.digest(idempotencyKey: $0, scope: "password \(account.id.uuidString.lowercased())")
        }
        let client = core.client(of: request, peer: context.peerAddress, deviceName: nil)
        do {
            try await core.confirmPassword(body.currentPassword, of: account, client: client)
        } catch let refusal as ServiceProblem where refusal.type == .passwordConfirmationFailed {
            // The retry of the change that set the current password (its answer was lost): the current password is
            // the new one by now. 204 again, once the new password proves it; nothing changes, no session ends.
            guard let changeKey, try await core.accounts.passwordWasSet(id: account.id, byChangeWithKey: changeKey)
            else { throw refusal }
            try await core.confirmPassword(body.newPassword, of: account, client: client)
            return Response(status: .noContent)
        }
        let hash = try await core.hasher.hash(body.newPassword)
        let now = Date()
        let current = context.user.sessionID
        try await core.pool.withTransaction { connection in
            try await AccountStore.updatePassword(id: account.id, hash: hash, changeKey: changeKey, now: now,
                                                  on: connection)
            try await SessionStore.end(userID: account.id, scope: .others, current: current, reason: .passwordChanged,
                                 now: now, on: connection)
        }
        return Response(status: .noContent)
    }

    private func account(of context: AuthenticatedContext) async throws -> Account {
        guard let account = try await core.accounts.find(id: context.user.userID) else { throw Self.accountGone }
        return account
    }

    /// A verified token whose account no longer exists: only possible in the instant between a deletion and the
    /// revocation reaching this check.
    static let accountGone = ServiceProblem(.unauthorized, .invalidToken, "The account of this token no longer exists.",
                                            headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])

    static let noStore: HTTPFields = [.cacheControl: "no-store"]
    /// For what the user reads back: the client may keep it and revalidate it with `If-None-Match`.
    static let privateNoCache: HTTPFields = [.cacheControl: "private, no-cache"]

    static func deviceNameErrors(_ name: String?) -> [FieldError] {
        guard let name else { return [] }
        if DisplayText.hasControlCharacters(name) {
            return [FieldError(field: "deviceName", message: "must not contain control characters")]
        }
        return (1...100).contains(name.count) ? [] : [FieldError(field: "deviceName", message: "must be 1 to 100 characters")]
    }
}
