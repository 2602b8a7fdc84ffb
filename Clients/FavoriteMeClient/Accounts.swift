import Contracts
import Foundation

/// Accounts and sessions (`/v1/auth`).
extension FavoriteMeClient {
    /// Creates the account and signs it in on this device.
    @discardableResult
    public func signUp(email: String, password: String, experience: ExperienceID) async throws(FavoriteMeError)
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
    public func signIn(email: String, password: String) async throws(FavoriteMeError) -> UserProfile {
        let body = try encode(SignInRequest(email: email, password: password, deviceName: deviceName,
                                            deviceCredential: await sessions.deviceCredential(for: email)))
        return try await start(try await send(Call(method: "POST", path: "/v1/auth/login", body: body,
                                                   authenticated: false), as: AuthSession.self))
    }

    /// The new session ends the one before (and any refresh of it under way); this user's queue and copy open, and
    /// what waited in the queue from their last session goes out.
    private func start(_ session: AuthSession) async throws(FavoriteMeError) -> UserProfile {
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
    public func restoreSession() async throws(FavoriteMeError) -> UserProfile? {
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
    public func signOut(_ scope: LogoutScope = .current) async throws(FavoriteMeError) {
        guard let session = try await sessions.current() else { return }
        let body = try encode(RefreshRequest(refreshToken: session.refreshToken))
        do {
            _ = try await send(Call(method: "POST", path: "/v1/auth/logout",
                                    query: [URLQueryItem(name: "scope", value: scope.rawValue)], body: body),
                               as: NoContent.self)
        } catch .signedOut {
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

    public func me() async throws(FavoriteMeError) -> UserProfile {
        let user = try await send(Call(method: "GET", path: "/v1/auth/me"), as: UserProfile.self)
        try await remember(user)
        return user
    }

    /// Changes the experience and/or preferences (a value of nil removes a preference). `defaultCategory` must be one
    /// of the experience's categories.
    @discardableResult
    public func updateProfile(experience: ExperienceID? = nil, preferences: [String: String?]? = nil)
        async throws(FavoriteMeError) -> UserProfile
    {
        let body = try encode(ProfileUpdate(experience: experience?.rawValue, preferences: preferences))
        let user = try await send(Call(method: "PATCH", path: "/v1/auth/me", body: body), as: UserProfile.self)
        try await remember(user)
        return user
    }

    public func changePassword(current: String, new: String) async throws(FavoriteMeError) {
        let body = try encode(PasswordChange(currentPassword: current, newPassword: new))
        _ = try await send(Call(method: "POST", path: "/v1/auth/me/password", body: body), as: NoContent.self)
    }

    /// Deletes the account (the password re-confirmed) and signs out.
    public func deleteAccount(password: String) async throws(FavoriteMeError) {
        let body = try encode(AccountDeletion(password: password))
        let user = try await sessions.current()?.user
        _ = try await send(Call(method: "DELETE", path: "/v1/auth/me", body: body), as: NoContent.self)
        if let user { await outbox.erase(user.id) }  // its waiting writes can never be sent now
        await sessions.end()
    }

    /// The user's sessions (devices), this one marked `current`.
    public func sessionList() async throws(FavoriteMeError) -> [SessionSummary] {
        try await send(Call(method: "GET", path: "/v1/auth/sessions"), as: SessionList.self).sessions
    }

    public func endSession(_ id: UUID) async throws(FavoriteMeError) {
        _ = try await send(Call(method: "DELETE", path: "/v1/auth/sessions/\(id.uuidString.lowercased())"),
                           as: NoContent.self)
    }

    private func remember(_ user: UserProfile) async throws(FavoriteMeError) {
        try await sessions.remember(user)
    }
}
