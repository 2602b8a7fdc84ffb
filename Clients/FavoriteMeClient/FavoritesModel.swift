#if canImport(Observation)
import Contracts
import Foundation
import Observation

/// What a SwiftUI screen binds to: the session, one experience's favorites and hearts, and whether the device is
/// offline, kept current from the client's events and from the user's other devices as they change
/// (``FavoriteMeClient/liveChanges(in:)``). Start it from the screen's `.task { await model.start() }`.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class FavoritesModel {
    /// Where the live changes stream stands.
    public enum Connection: Sendable, Hashable {
        /// Nobody is signed in: no stream.
        case idle
        /// Opening the stream.
        case connecting
        /// Changes on other devices show here as they happen.
        case live
        /// The stream could not be kept open; it tries again after `retryIn` (sooner when the network returns).
        case offline(retryIn: Duration)
    }

    public let client: FavoriteMeClient
    public let experience: ExperienceID
    /// The signed-in user; nil when signed out.
    public private(set) var user: UserProfile?
    /// The server ended the session: show the sign-in screen (the user's waiting writes are kept for them).
    public private(set) var sessionExpired = false
    /// The device's copy, most recent first: readable offline.
    public private(set) var favorites: [Favorite] = []
    /// The items drawn with a filled heart, waiting writes included.
    public private(set) var hearts: Set<String> = []
    /// Writes not yet applied by the server.
    public private(set) var pendingWrites = 0
    /// What last went wrong (a refused write, a sync that failed), for the screen to show; never a cancellation.
    public private(set) var lastError: FavoriteMeError?
    /// The last thing the client reported about the device's copy (a write refused, a file set aside).
    public private(set) var lastLocalEvent: LocalEvent?
    public private(set) var connection = Connection.idle
    /// Writes wait because the last attempt to send them failed on the way (they go out by themselves later).
    public private(set) var writesWaitForNetwork = false

    public init(client: FavoriteMeClient, experience: ExperienceID) {
        self.client = client
        self.experience = experience
    }

    /// Whether to show an offline banner: the live stream is down, or writes wait because the server could not be
    /// reached. The hearts still work: they are sent when it can.
    public var isOffline: Bool {
        if case .offline = connection { return true }
        return writesWaitForNetwork || lastError?.isConnectivity == true
    }

    /// Follows the client's session, queue and live changes until the calling task is cancelled.
    public func start() async {
        let authEvents = await client.authEvents()
        let localEvents = await client.localEvents()
        await reload()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                for await event in authEvents { await self?.handle(event) }
            }
            group.addTask { [weak self] in
                for await event in localEvents { await self?.handle(event) }
            }
            group.addTask { [weak self] in await self?.followLiveChanges() }
        }
    }

    /// One live changes stream for each user who signs in: a stream ends with its user's session (signed out, or
    /// another user signed in), and the next user's starts from their `signedIn`.
    private func followLiveChanges() async {
        for await event in await client.authEvents() {
            guard case .signedIn = event else { continue }
            connection = .connecting
            for await change in client.liveChanges(in: experience) { apply(change) }
            connection = .idle
        }
    }

    func apply(_ change: LiveChange) {
        switch change {
        case .connected, .changed, .resynced:
            connection = .live
        case .disconnected(_, let retryIn):
            connection = .offline(retryIn: retryIn)
        }
    }

    public func toggleHeart(_ itemId: String) async {
        await run {
            if hearts.contains(itemId) {
                _ = try await client.unfavorite(itemId, in: experience)
            } else {
                _ = try await client.favorite(itemId, in: experience)
            }
        }
    }

    /// Sends what waits and reads what other devices did (pull to refresh).
    public func sync() async {
        await run { _ = try await client.syncFavorites() }
    }

    /// Sends what waits now (an offline banner's "Try again").
    public func sendNow() async {
        await run { _ = await client.sendPendingWrites() }
    }

    /// Runs `work`, keeping what went wrong for the screen (a cancellation is not something that went wrong), then
    /// draws what the device has now.
    private func run(_ work: () async throws -> Void) async {
        do {
            try await work()
            lastError = nil
        } catch let error as FavoriteMeError {
            lastError = error
        } catch {
            // CancellationError: the screen went away, or the user moved on.
        }
        await reload()
    }

    func handle(_ event: AuthEvent) async {
        switch event {
        case .signedIn(let user), .refreshed(let user):
            if self.user?.id != user.id { lastError = nil }
            self.user = user
            sessionExpired = false
        case .signedOut:
            user = nil
        case .sessionExpired:
            user = nil
            sessionExpired = true
        }
        await reload()
    }

    func handle(_ event: LocalEvent) async {
        switch event {
        case .changed: break
        case .refused(_, let problem):
            lastLocalEvent = event
            lastError = .refused(problem)
        default:
            lastLocalEvent = event
        }
        await reload()
    }

    func reload() async {
        hearts = await client.hearts(in: experience)
        favorites = await client.syncedFavorites(in: experience)
        pendingWrites = await client.pendingWrites().count
        writesWaitForNetwork = pendingWrites > 0 ? await client.isWaitingToRetry : false
    }
}
#endif
