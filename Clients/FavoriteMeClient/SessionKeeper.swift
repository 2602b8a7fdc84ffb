import Contracts
import Foundation

/// The signed-in session: loaded from its ``TokenStore`` once, its access token refreshed when it has expired (or
/// the server says so), one refresh at a time however many calls need it. A burst of calls with an expired token
/// sends one refresh request: the server rotates refresh tokens and treats a second use of one as theft.
actor SessionKeeper {
    private let store: any TokenStore
    private var session: StoredSession?
    private var loaded = false
    private var refreshing: Task<StoredSession, any Error>?
    /// How long before its expiry an access token is refreshed rather than sent (clocks differ, requests take time).
    static let margin: TimeInterval = 30

    init(store: any TokenStore) {
        self.store = store
    }

    func current() async throws(FavoriteMeError) -> StoredSession? {
        if !loaded {
            do {
                session = try await store.load()
            } catch {
                throw .storage("the session could not be read: \(error)")
            }
            loaded = true
        }
        return session
    }

    func replace(with session: StoredSession) async throws(FavoriteMeError) {
        self.session = session
        loaded = true
        do { try await store.save(session) } catch { throw .storage("the session could not be stored: \(error)") }
    }

    /// Forgets the session, here and in the store.
    func clear() async {
        session = nil
        loaded = true
        refreshing = nil
        try? await store.clear()
    }

    /// An access token to send now: the current one, or a fresh one when it has expired.
    func accessToken(refresh: @escaping @Sendable (String) async throws(FavoriteMeError) -> AuthSession)
        async throws(FavoriteMeError) -> String
    {
        guard let session = try await current() else { throw .signedOut }
        if session.accessTokenExpiresAt.timeIntervalSinceNow > Self.margin { return session.accessToken }
        return try await refreshed(after: session.accessToken, refresh: refresh).accessToken
    }

    /// The session after a refresh of the one whose access token was `failedToken`: if another call refreshed it
    /// meanwhile, that result; if a refresh is under way, its result; else a new refresh. A refresh the server refuses
    /// (the refresh token expired, reused or revoked) signs the user out here.
    func refreshed(after failedToken: String,
                   refresh: @escaping @Sendable (String) async throws(FavoriteMeError) -> AuthSession)
        async throws(FavoriteMeError) -> StoredSession
    {
        guard let session = try await current() else { throw .signedOut }
        if session.accessToken != failedToken { return session }
        let task: Task<StoredSession, any Error>
        if let refreshing {
            task = refreshing
        } else {
            let refreshToken = session.refreshToken
            task = Task { StoredSession(try await refresh(refreshToken), now: Date()) }
            refreshing = task
        }
        do {
            let fresh = try await task.value
            if refreshing == task {
                refreshing = nil
                try await replace(with: fresh)
            }
            return fresh
        } catch let error as FavoriteMeError {
            if refreshing == task { refreshing = nil }
            if case .refused(let problem) = error, problem.status == 401 {
                await clear()
                throw .signedOut
            }
            throw error
        } catch {
            if refreshing == task { refreshing = nil }
            throw .transport("\(error)")
        }
    }
}
