import Contracts
import Foundation

/// The device's session: loaded from its ``TokenStore`` once, its access token refreshed when it has expired (or the
/// server says so), one refresh at a time however many calls need it. A burst of calls with an expired token sends
/// one refresh request: the server rotates refresh tokens and treats a second use of one as theft.
///
/// Each session the device holds is a new *generation*. A call, or a refresh, begun in one generation never lands in
/// another: a sign-in cancels the refresh under way, and a refresh that answers late for a session that is over is
/// dropped, so that user A's answer never overwrites user B's session, nor A's writes go out with B's token.
///
/// A refresh whose answer is lost (the app suspended in the middle, a dropped connection) must not count as reuse of
/// the refresh token when it is tried again, however much later: each refresh gets a key, stored with the session
/// before the request leaves, and every attempt of that refresh sends it (`Idempotency-Key`); the server answers a
/// retry of the same token with the same key with the same successor. The key goes when an answer is stored.
actor SessionKeeper {
    /// The refresh request: the refresh token and the refresh's key.
    typealias Refresh = @Sendable (_ refreshToken: String, _ key: String) async throws -> AuthSession

    /// An access token, and the session it belongs to.
    struct Credential: Sendable {
        var token: String
        var generation: Int
    }

    private let store: any TokenStore
    let events: Broadcast<AuthEvent>
    /// Told when the server ends the session (a refused refresh), before the app is.
    private let onExpiry: @Sendable (UserProfile) async -> Void
    private let backgroundActivity: any BackgroundActivity
    private var session: StoredSession?
    private var loaded = false
    private var generation = 0
    private var refreshing: (generation: Int, task: Task<StoredSession, any Error>)?
    /// How long before its expiry an access token is refreshed rather than sent (clocks differ, requests take time).
    static let margin: TimeInterval = 30

    init(store: any TokenStore, events: Broadcast<AuthEvent>, backgroundActivity: any BackgroundActivity,
         onExpiry: @escaping @Sendable (UserProfile) async -> Void) {
        self.store = store
        self.events = events
        self.backgroundActivity = backgroundActivity
        self.onExpiry = onExpiry
    }

    func current() async throws(FavoriteMeError) -> StoredSession? {
        if !loaded {
            do { session = try await store.load() } catch { throw .storage("the session could not be read: \(error)") }
            loaded = true
        }
        return session
    }

    /// The state a new follower of ``events`` starts from.
    func state() async -> AuthEvent {
        if let user = try? await current()?.user { return .signedIn(user) }
        return .signedOut
    }

    /// A new session (sign-in, sign-up): the one before it is over, with any refresh of it under way.
    func begin(_ session: StoredSession) async throws(FavoriteMeError) {
        generation += 1
        refreshing?.task.cancel()
        refreshing = nil
        try await adopt(session)
        await events.send(.signedIn(session.user))
    }

    /// The device credential kept for `email`, if any (a store that cannot read it only loses "known device").
    func deviceCredential(for email: String) async -> String? {
        try? await store.deviceCredential(for: Self.normalized(email))
    }

    /// Keeps the device credential a sign-in answered with, past sign-out.
    func rememberDevice(_ credential: String, for email: String) async {
        try? await store.saveDeviceCredential(credential, for: Self.normalized(email))
    }

    /// An email as the server compares it: trimmed, composed, lower case.
    private static func normalized(_ email: String) -> String {
        email.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping.lowercased()
    }

    /// The same session with the user's profile as the server now has it.
    func remember(_ user: UserProfile) async throws(FavoriteMeError) {
        guard var session = try await current(), session.user.id == user.id, session.user != user else { return }
        session.user = user
        try await adopt(session)
        await events.send(.refreshed(user))
    }

    /// Ends the session on this device (the app signed out, or the account was deleted).
    func end() async {
        forget()
        try? await store.clear()
        await events.send(.signedOut)
    }

    /// An access token to send now for `user` (nil: whoever is signed in): the current one, or a fresh one when it has
    /// expired. Another user's session is never used for `user`'s call.
    func credential(for user: UUID?, refresh: @escaping Refresh) async throws(FavoriteMeError) -> Credential
    {
        guard let session = try await current(), user == nil || session.user.id == user else { throw .signedOut }
        let credential = Credential(token: session.accessToken, generation: generation)
        if session.accessTokenExpiresAt.timeIntervalSinceNow > Self.margin { return credential }
        return try await refreshed(after: credential, refresh: refresh)
    }

    /// A fresh credential after `failed` was refused or expired: if another call refreshed it meanwhile, that one; if
    /// a refresh is under way, its result; else a new refresh. A refresh the server refuses ends the session.
    func refreshed(after failed: Credential, refresh: @escaping Refresh) async throws(FavoriteMeError) -> Credential {
        guard failed.generation == generation, var session = try await current() else { throw .signedOut }
        if session.accessToken != failed.token { return Credential(token: session.accessToken, generation: generation) }
        let task: Task<StoredSession, any Error>
        if let refreshing, refreshing.generation == generation {
            task = refreshing.task
        } else {
            // No suspension between here and `refreshing`: concurrent calls must find this refresh and share it.
            let newKey = session.pendingRefreshKey == nil
            if newKey {
                session.pendingRefreshKey = UUID().uuidString.lowercased()
                self.session = session
            }
            let (store, refreshToken, key) = (store, session.refreshToken, session.pendingRefreshKey ?? "")
            let keyed = session
            let work = { @Sendable () async -> Result<StoredSession, any Error> in
                // Stored before the request leaves: a relaunch that retries this refresh sends the same key.
                if newKey { try? await store.save(keyed) }
                do { return .success(StoredSession(try await refresh(refreshToken, key), now: Date())) } catch {
                    return .failure(error)
                }
            }
            task = Task { [backgroundActivity] in
                try await backgroundActivity.run("Refresh the FavoriteMe session", work).get()
            }
            refreshing = (generation, task)
        }
        let outcome = await task.result
        // Another session began while this refresh was out: its answer is not that session's.
        guard failed.generation == generation else { throw .signedOut }
        if refreshing?.task == task { refreshing = nil }
        switch outcome {
        case .success(let fresh):
            if self.session?.accessToken == failed.token {
                try await adopt(fresh)
                await events.send(.refreshed(fresh.user))
            }
            return Credential(token: self.session?.accessToken ?? fresh.accessToken, generation: generation)
        case .failure(FavoriteMeError.refused(let problem)) where problem.status == 401:
            await expire()
            throw .signedOut
        case .failure(let error as FavoriteMeError):
            throw error
        case .failure(let error):
            throw .transport("\(error)")
        }
    }

    /// The server ended the session: forgotten here, that user's copy closed, the app told.
    private func expire() async {
        guard let user = session?.user else { return }
        forget()
        try? await store.clear()
        await onExpiry(user)
        await events.send(.sessionExpired(user))
    }

    private func forget() {
        generation += 1
        refreshing?.task.cancel()
        refreshing = nil
        session = nil
        loaded = true
    }

    private func adopt(_ session: StoredSession) async throws(FavoriteMeError) {
        self.session = session
        loaded = true
        do { try await store.save(session) } catch { throw .storage("the session could not be stored: \(error)") }
    }
}
