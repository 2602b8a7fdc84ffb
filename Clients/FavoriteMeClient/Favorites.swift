import Contracts
import Foundation

/// What ``FavoriteMeClient/syncFavorites()`` did: the waiting writes it sent, and the changes it applied.
public struct SyncReport: Sendable, Hashable {
    public var sent: DrainReport
    public var changes: [FavoriteChange]
}

/// What a write to the favorites did: done (with the server's answer), or queued, to be sent when the server can be
/// reached (its heart already drawn; it stays drawn until the server takes the write or refuses it).
public enum WriteResult<Value: Sendable>: Sendable {
    case done(Value)
    case queued(PendingWrite)
}

/// The user's favorites (`/v1/favorites`). Every write goes through the signed-in user's queue (see
/// ``PendingWrite``), online or not, so that writes reach the server in the order they were made, each once.
extension FavoriteMeClient {
    /// Favorites an item: 201's favorite, or the stored one when it already was.
    @discardableResult
    public func favorite(_ itemId: String, in experience: ExperienceID) async throws -> WriteResult<Favorite> {
        try await write(.favorite(experience: experience, itemId: itemId)).withFavorite()
    }

    @discardableResult
    public func unfavorite(_ itemId: String, in experience: ExperienceID) async throws -> WriteResult<Void> {
        try await write(.unfavorite(experience: experience, itemId: itemId)).map { _ in () }
    }

    /// Clears every favorite of one experience.
    @discardableResult
    public func clearFavorites(in experience: ExperienceID) async throws -> WriteResult<Void> {
        try await write(.clear(experience: experience)).map { _ in () }
    }

    /// Writes a card of the user's own (where the experience has `userWrittenItems`).
    @discardableResult
    public func writeCard(_ draft: CardDraft, in experience: ExperienceID) async throws -> WriteResult<Favorite> {
        try await write(.writeCard(experience: experience, draft: draft)).withFavorite()
    }

    /// The items to draw with a filled heart: the device's copy with the waiting writes on top (no request).
    public func hearts(in experience: ExperienceID) async -> Set<String> {
        await outbox.hearts(in: experience)
    }

    /// The writes waiting to be sent, oldest first.
    public func pendingWrites() async -> [PendingWrite] {
        await openCurrentUser()
        return await outbox.waiting
    }

    /// Whether the queue's last send failed on the way and it waits to try again (an app's offline banner): it goes
    /// out by itself after a backoff, or at once on ``networkDidReturn()``, ``appDidBecomeActive()`` or
    /// ``sendPendingWrites()``.
    public var isWaitingToRetry: Bool {
        get async { await outbox.isBackingOff }
    }

    /// The signed-in user, with their documents open; nil when nobody is signed in or the documents cannot be read.
    @discardableResult
    func openCurrentUser() async -> UUID? {
        guard let user = try? await sessions.current()?.user, (try? await outbox.open(for: user.id)) != nil else {
            return nil
        }
        return user.id
    }

    /// Brings the device's copy up to date from the changes feed, after sending the waiting writes: what another
    /// device did shows here. Returns what was sent and the changes applied.
    @discardableResult
    public func syncFavorites() async throws -> SyncReport {
        guard let user = try await sessions.current()?.user else { throw FavoriteMeError.signedOut }
        try await outbox.open(for: user.id)
        let sent = await sendPendingWrites()
        // Every step is for this user only: if another signs in meanwhile, nothing of this sync lands in their copy.
        guard let start = await outbox.syncStart(for: user.id) else { throw FavoriteMeError.signedOut }
        var since = start.since
        var applied: [FavoriteChange] = []
        while true {
            let page: FavoriteChanges
            do {
                page = try await send(Call(method: "GET", path: "/v1/favorites/changes",
                                           query: [URLQueryItem(name: "since", value: String(since))]),
                                      as: FavoriteChanges.self, for: user.id)
            } catch FavoriteMeError.refused(let problem) where problem.type == .syncPositionAhead && since > 0 {
                // The copy on the device is not of this account's log (from before a restore, say): start it again
                // from the beginning rather than skip what came since.
                guard await outbox.restartSync(for: user.id) else { throw FavoriteMeError.signedOut }
                since = 0
                applied = []
                continue
            }
            guard await outbox.apply(page.changes, upTo: page.version, for: user.id) else {
                throw FavoriteMeError.signedOut
            }
            applied += page.changes
            since = max(since, page.version)
            guard page.hasMore else { break }
        }
        guard await outbox.finishSync(folding: start.sent, for: user.id) else { throw FavoriteMeError.signedOut }
        return SyncReport(sent: sent, changes: applied)
    }

    /// The device's copy of one experience's favorites, most recent first (no request): as last synced, with the
    /// writes the server applied since on top. What to show when the server cannot be reached.
    public func syncedFavorites(in experience: ExperienceID) async -> [Favorite] {
        await outbox.favorites(in: experience).sorted { $0.favoritedAt > $1.favoritedAt }
    }

    /// One page of the favorites as the server has them, in `sort` order (the experience's default when nil),
    /// filtered by `text` (titles, and a card's facts).
    public func favorites(in experience: ExperienceID, sort: ListSort? = nil, matching text: String? = nil,
                          limit: Int? = nil, cursor: String? = nil) async throws -> FavoritePage
    {
        var query = [URLQueryItem(name: "experience", value: experience.rawValue)]
        if let sort { query.append(URLQueryItem(name: "sort", value: sort.rawValue)) }
        if let text { query.append(URLQueryItem(name: "q", value: text)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        return try await send(Call(method: "GET", path: "/v1/favorites", query: query), as: FavoritePage.self)
    }

    /// The favorited item ids as the server has them.
    public func favoriteIDs(in experience: ExperienceID) async throws -> FavoriteIDs {
        try await send(Call(method: "GET", path: "/v1/favorites/ids",
                            query: [URLQueryItem(name: "experience", value: experience.rawValue)]), as: FavoriteIDs.self)
    }

    /// The most favorited items of an experience.
    public func popular(in experience: ExperienceID, limit: Int? = nil) async throws -> [PopularItem] {
        var query = [URLQueryItem(name: "experience", value: experience.rawValue)]
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        return try await send(Call(method: "GET", path: "/v1/favorites/popular", query: query),
                              as: PopularItems.self).items
    }
}

extension WriteResult {
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> WriteResult<Other> {
        switch self {
        case .done(let value): .done(transform(value))
        case .queued(let write): .queued(write)
        }
    }
}

extension WriteResult where Value == Favorite? {
    /// A write that answers with a favorite (a favorite, a card) always has one when done.
    func withFavorite() throws(FavoriteMeError) -> WriteResult<Favorite> {
        switch self {
        case .done(let favorite?): return .done(favorite)
        case .done(nil): throw .unexpectedAnswer(status: 200, detail: "a write answered without its favorite")
        case .queued(let write): return .queued(write)
        }
    }
}
