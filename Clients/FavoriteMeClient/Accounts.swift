import Contracts
import Foundation

/// Accounts and sessions (`/v1/auth`).
extension FavoriteMeClient {
    /// Creates the account and signs it in on this device.
    @discardableResult
    public func signUp(email: String, password: String, experience: ExperienceID) async throws
        -> UserProfile
    {
        let body = try encode(SignUpRequest(email: email, password: password, experience: experience.rawValue,
                                            deviceName: deviceName))
        return try await start(try await send(Call(method: "POST", path: "/v1/auth/signup", body: body,
                                                   authenticated: false), as: AuthSession.self))
    }

    /// Signs in, sending the device credential kept from this account's earlier sign-ins on this device: a device
    /// the server knows is not slowed by strangers' failed sign-ins from the same address.
    @discardableResult
    public func signIn(email: String, password: String) async throws -> UserProfile {
        let body = try encode(SignInRequest(email: email, password: password, deviceName: deviceName,
                                            deviceCredential: await sessions.deviceCredential(for: email)))
        return try await start(try await send(Call(method: "POST", path: "/v1/auth/login", body: body,
                                                   authenticated: false), as: AuthSession.self))
    }

    /// The new session ends the one before (and any refresh of it under way); this user's queue and copy open, and
    /// what waited in the queue from their last session goes out.
    private func start(_ session: AuthSession) async throws -> UserProfile {
        if let credential = session.deviceCredential { await sessions.rememberDevice(credential, for: session.user.email) }
        await outbox.close()
        try await sessions.begin(StoredSession(session, now: Date()))
        try await outbox.open(for: session.user.id)
        Task { await sendPendingWrites() }
        return session.user
    }

    /// At launch: the signed-in user as stored, with their queue and synced favorites, without the network, so that
    /// an app opened offline opens into its screens; nil when nobody is signed in. Then, in the background, the
    /// profile is read again (``AuthEvent/refreshed(_:)``, or ``AuthEvent/sessionExpired(_:)`` when the server
    /// ended the session meanwhile) and the queue is sent.
    public func restoreSession() async throws -> UserProfile? {
        guard let stored = try await sessions.current() else { return nil }
        try await outbox.open(for: stored.user.id)
        Task {
            _ = try? await me()
            await sendPendingWrites()
        }
        return stored.user
    }

    /// The user as last stored, without a request.
    public var storedUser: UserProfile? {
        get async { try? await sessions.current()?.user }
    }

    /// Signs out (`scope`: this device, the others, or everywhere). This device's session is forgotten locally even
    /// when the server cannot be reached: the refresh token it held is no longer kept. The synced copy goes; writes
    /// still waiting stay on the device, and go out at this user's next sign-in on it.
    public func signOut(_ scope: LogoutScope = .current) async throws {
        guard let session = try await sessions.current() else { return }
        let body = try encode(RefreshRequest(refreshToken: session.refreshToken))
        do {
            _ = try await send(Call(method: "POST", path: "/v1/auth/logout",
                                    query: [URLQueryItem(name: "scope", value: scope.rawValue)], body: body),
                               as: NoContent.self)
        } catch FavoriteMeError.signedOut {
            return  // already
        } catch {
            if scope != .others { await forget() }
            throw error
        }
        if scope != .others { await forget() }
    }

    /// Forgets the session and the device's copy of the user's favorites; the queue stays for their next sign-in.
    private func forget() async {
        if let user = try? await sessions.current()?.user { await outbox.forgetCopy(of: user.id) }
        await sessions.end()
    }

    public func me() async throws -> UserProfile {
        let user = try await send(Call(method: "GET", path: "/v1/auth/me"), as: UserProfile.self)
        try await remember(user)
        return user
    }

    /// Changes the experience, preferences (a value of nil removes a preference) and/or display name (an empty one
    /// removes it). `defaultCategory` must be one of the experience's categories.
    @discardableResult
    public func updateProfile(experience: ExperienceID? = nil, preferences: [String: String?]? = nil,
                              displayName: String? = nil) async throws -> UserProfile
    {
        let body = try encode(ProfileUpdate(experience: experience?.rawValue, preferences: preferences,
                                            displayName: displayName))
        let user = try await send(Call(method: "PATCH", path: "/v1/auth/me", body: body), as: UserProfile.self)
        try await remember(user)
        return user
    }

    public func changePassword(current: String, new: String) async throws {
        let body = try encode(PasswordChange(currentPassword: current, newPassword: new))
        _ = try await send(Call(method: "POST", path: "/v1/auth/me/password", body: body), as: NoContent.self)
    }

    /// Deletes the account (the password re-confirmed) and signs out.
    public func deleteAccount(password: String) async throws {
        let body = try encode(AccountDeletion(password: password))
        let user = try await sessions.current()?.user
        _ = try await send(Call(method: "DELETE", path: "/v1/auth/me", body: body), as: NoContent.self)
        if let user { await outbox.erase(user.id) }  // its waiting writes can never be sent now
        await sessions.end()
    }

    /// The user's sessions (devices), this one marked `current`.
    public func sessionList() async throws -> [SessionSummary] {
        try await send(Call(method: "GET", path: "/v1/auth/sessions"), as: SessionList.self).sessions
    }

    public func endSession(_ id: UUID) async throws {
        _ = try await send(Call(method: "DELETE", path: "/v1/auth/sessions/\(id.uuidString.lowercased())"),
                           as: NoContent.self)
    }

    private func remember(_ user: UserProfile) async throws(FavoriteMeError) {
        try await sessions.remember(user)
    }
}

/// Account recovery over mail: a password reset for someone who cannot sign in, and the verification of the
/// account's email. Each mail holds a link to a page of the gateway (`/account/reset-password?token=…`,
/// `/account/verify-email?token=…`); an app that claims those paths as universal links takes the token from the URL
/// (``recoveryLink(from:)``) and confirms here instead.
extension FavoriteMeClient {
    /// Asks for a mail with a link that resets the password of the account of `email`; no session needed. The answer
    /// is the same whether or not an account has the address (its `detail` can be shown as it is), so it tells
    /// nobody which addresses have accounts.
    ///
    /// Throws ``FavoriteMeError/refused(_:)`` with `validation-failed` (field `email`) for an address that cannot be
    /// one, and `mail-throttled` or `rate-limited` (429, ``APIProblem/retryAfter``) when too many mails were asked for
    /// this address or from this network. Not retried: each request may send a mail.
    @discardableResult
    public func requestPasswordReset(email: String) async throws -> MailRequestAccepted {
        let body = try encode(PasswordResetRequest(email: email))
        return try await send(Call(method: "POST", path: "/v1/auth/password-reset", body: body, authenticated: false),
                              as: MailRequestAccepted.self)
    }

    /// Sets `newPassword` (the sign-up rules apply) on the account of a reset link's `token`; no session needed.
    ///
    /// On success every session of that account has ended, on every device, and the old password no longer works
    /// (the email counts as verified too: the mail reached its owner). If this client held a session of that account,
    /// it is dead: its next refresh is refused and ends it (``AuthEvent/sessionExpired(_:)``). Sign in again with the
    /// new password.
    ///
    /// Throws ``FavoriteMeError/refused(_:)`` with `invalid-link-token` (used, replaced by a newer mail, or not a
    /// reset link) or `expired-link-token` (400: ask for a new mail either way), or `validation-failed` naming
    /// `newPassword`.
    public func confirmPasswordReset(token: String, newPassword: String) async throws {
        let body = try encode(PasswordResetConfirmation(token: token, newPassword: newPassword))
        _ = try await send(Call(method: "POST", path: "/v1/auth/password-reset/confirm", body: body,
                                authenticated: false), as: NoContent.self)
    }

    /// Sends the signed-in user a new verification mail (the link of an earlier one stops working).
    ///
    /// Throws ``FavoriteMeError/refused(_:)`` with `email-already-verified` (409; the session is then refreshed, so
    /// the stored profile says verified), or `mail-throttled` (429, ``APIProblem/retryAfter``);
    /// ``FavoriteMeError/signedOut`` when nobody is signed in.
    @discardableResult
    public func resendVerificationEmail() async throws -> MailRequestAccepted {
        do {
            return try await send(Call(method: "POST", path: "/v1/auth/email-verification"),
                                  as: MailRequestAccepted.self)
        } catch FavoriteMeError.refused(let problem) where problem.type == .emailAlreadyVerified {
            // Verified on another device or in a browser: the profile and token held here are older than that.
            await refreshAfterVerification()
            throw FavoriteMeError.refused(problem)
        }
    }

    /// Confirms the account's email with a verification link's `token`; no session needed.
    ///
    /// When someone is signed in on this client, their session is then refreshed, so that the stored profile
    /// (``storedUser``, ``AuthEvent/refreshed(_:)``) and the access token (claim `email_verified`, which services
    /// requiring a verified email check) say verified — if the link was theirs. A refresh that fails (offline) is no
    /// error here: the session's next refresh brings the same.
    ///
    /// Throws ``FavoriteMeError/refused(_:)`` with `invalid-link-token` (used already, replaced by a newer mail, or
    /// not a verification link) or `expired-link-token` (400: ask for a new mail with ``resendVerificationEmail()``).
    public func confirmEmail(token: String) async throws {
        let body = try encode(EmailVerificationConfirmation(token: token))
        _ = try await send(Call(method: "POST", path: "/v1/auth/email-verification/confirm", body: body,
                                authenticated: false), as: NoContent.self)
        await refreshAfterVerification()
    }

    /// What a link of a recovery mail asks for, when `url` is one: the path ends in `/account/reset-password` or
    /// `/account/verify-email` (a trailing `/` allowed) and its query has one non-empty `token` (percent-decoded;
    /// other query items and a fragment are ignored). The scheme and host are not checked: an app hands over only
    /// the universal links of its own domains.
    ///
    ///     switch FavoriteMeClient.recoveryLink(from: url) {
    ///     case .passwordReset(let token): showNewPasswordForm(token)  // then confirmPasswordReset(token:newPassword:)
    ///     case .emailVerification(let token): try await client.confirmEmail(token: token)
    ///     case nil: break  // another link of the domain
    ///     }
    public static func recoveryLink(from url: URL) -> RecoveryLink? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        var segments = components.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segments.last == "" { segments.removeLast() }  // one trailing slash, as the server allows
        guard segments.count >= 2, segments[segments.count - 2] == "account" else { return nil }
        let tokens = (components.queryItems ?? []).filter { $0.name == "token" }
        guard tokens.count == 1, let token = tokens[0].value, !token.isEmpty else { return nil }
        switch segments[segments.count - 1] {
        case "reset-password": return .passwordReset(token)
        case "verify-email": return .emailVerification(token)
        default: return nil
        }
    }

    /// Renews the session of whoever is signed in (if anyone), so that its profile and access token carry a
    /// verification that just happened. Quiet: the caller's own request has already succeeded.
    private func refreshAfterVerification() async {
        guard let before = try? await sessions.current() else { return }
        let refresh = refresher
        guard let credential = try? await sessions.credential(for: before.user.id, refresh: refresh) else { return }
        // A token refreshed just now (it had expired) already says what the server knows.
        guard credential.token == before.accessToken else { return }
        _ = try? await sessions.refreshed(after: credential, refresh: refresh)
    }
}

/// What the link of a recovery mail asks for (see ``FavoriteMeClient/recoveryLink(from:)``), with the link's token.
public enum RecoveryLink: Sendable, Hashable {
    /// `/account/reset-password?token=…`: ask for a new password, then
    /// ``FavoriteMeClient/confirmPasswordReset(token:newPassword:)``.
    case passwordReset(String)
    /// `/account/verify-email?token=…`: ``FavoriteMeClient/confirmEmail(token:)``.
    case emailVerification(String)

    /// The link's token.
    public var token: String {
        switch self {
        case .passwordReset(let token), .emailVerification(let token): token
        }
    }
}
