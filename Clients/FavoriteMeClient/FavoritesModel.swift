#if canImport(Observation)
import Contracts
import Foundation
import Observation

/// What a SwiftUI screen binds to: the session and one experience's favorites and hearts, kept current from the
/// client's events and from the user's other devices as they change (``FavoriteMeClient/liveChanges(in:)``). Start it
/// from the screen's `.task { await model.start() }`.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class FavoritesModel {
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
    /// What last went wrong (a refused or parked write, a sync that failed), for the screen to show.
    public private(set) var lastError: FavoriteMeError?
    /// The last thing the client reported about the device's copy (a write refused or parked, a file set aside).
    public private(set) var lastLocalEvent: LocalEvent?

    public init(client: FavoriteMeClient, experience: ExperienceID) {
        self.client = client
        self.experience = experience
    }

    /// Follows the client's session and queue until the calling task is cancelled.
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
            // Other devices' changes as they happen, for as long as someone is signed in (the copy is updated, then
            // the client's local events redraw).
            let (client, experience) = (client, experience)
            group.addTask {
                for await event in await client.authEvents() {
                    guard case .signedIn = event else { continue }
                    for await _ in client.liveChanges(in: experience) {}
                }
            }
        }
    }

    public func toggleHeart(_ itemId: String) async {
        do throws(FavoriteMeError) {
            if hearts.contains(itemId) {
                try await client.unfavorite(itemId, in: experience)
            } else {
                try await client.favorite(itemId, in: experience)
            }
        } catch {
            lastError = error
        }
        await reload()
    }

    /// Sends what waits and reads what other devices did (pull to refresh).
    public func sync() async {
        do throws(FavoriteMeError) {
            try await client.syncFavorites()
            lastError = nil
        } catch {
            lastError = error
        }
        await reload()
    }

    private func handle(_ event: AuthEvent) async {
        switch event {
        case .signedIn(let user), .refreshed(let user):
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

    private func handle(_ event: LocalEvent) async {
        if event != .changed { lastLocalEvent = event }
        await reload()
    }

    private func reload() async {
        hearts = await client.hearts(in: experience)
        favorites = await client.syncedFavorites(in: experience)
        pendingWrites = await client.pendingWrites().count
    }
}
#endif
