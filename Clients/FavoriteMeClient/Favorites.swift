import Contracts
import Foundation

/// What ``FavoriteMeClient/syncFavorites()`` did: the waiting writes it sent, and the changes it applied.
public struct SyncReport: Sendable, Equatable {
    public var sent: DrainReport
    public var changes: [FavoriteChange]
}

/// What a write to the favorites did: done (with the server's answer), or queued to be sent when the server can be
/// reached (its heart already drawn).
public enum WriteResult<Value: Sendable>: Sendable {
    case done(Value)
    case queued(PendingWrite)
}

/// The user's favorites (`/v1/favorites`). Writes go through the device's queue (see ``PendingWrite``): made offline,
/// or failing on the way, they wait and are sent in order later, each applied once.
extension FavoriteMeClient {
    /// Favorites an item: 201's favorite, or the stored one when it already was.
    @discardableResult
    public func favorite(_ itemId: String, in experience: ExperienceID) async throws(FavoriteMeError)
        -> WriteResult<Favorite>
    {
        try await write(.favorite(experience: experience, itemId: itemId)).withFavorite()
    }

    @discardableResult
    public func unfavorite(_ itemId: String, in experience: ExperienceID) async throws(FavoriteMeError)
        -> WriteResult<Void>
    {
        try await write(.unfavorite(experience: experience, itemId: itemId)).map { _ in () }
    }

    /// Clears every favorite of one experience.
    @discardableResult
    public func clearFavorites(in experience: ExperienceID) async throws(FavoriteMeError) -> WriteResult<Void> {
        try await write(.clear(experience: experience)).map { _ in () }
    }

    /// Writes a card of the user's own (where the experience has `userWrittenItems`).
    @discardableResult
    public func writeCard(_ draft: CardDraft, in experience: ExperienceID) async throws(FavoriteMeError)
        -> WriteResult<Favorite>
    {
        try await write(.writeCard(experience: experience, draft: draft)).withFavorite()
    }

    /// The items to draw with a filled heart: the device's copy with the waiting writes on top (no request).
    public func hearts(in experience: ExperienceID) async -> Set<String> {
        await outbox.hearts(in: experience)
    }

    /// The writes waiting to be sent, oldest first.
    public func pendingWrites() async -> [PendingWrite] {
        await outbox.load().pending
    }

    /// Sends the waiting writes in order, each with its own key, until one cannot reach the server. A write the
    /// server refuses is dropped (its heart rolls back) and reported. Concurrent calls share one drain.
    @discardableResult
    public func sendPendingWrites() async -> DrainReport {
        await outbox.drain { [self] in
            var report = DrainReport()
            let pending = await outbox.load().pending
            for write in pending {
                do throws(FavoriteMeError) {
                    let answer = try await perform(write)
                    await outbox.update { state in
                        state.pending.removeAll { $0.id == write.id }
                        state.apply(write.kind, answer: answer)
                    }
                    report.sent.append(write)
                } catch .refused(let problem) where problem.isFinal {
                    await outbox.update { $0.pending.removeAll { $0.id == write.id } }
                    report.refused.append(.init(write: write, problem: problem))
                } catch {
                    break  // offline, or the server or the session not ready: the rest wait their turn
                }
            }
            report.waiting = await outbox.load().pending.count
            return report
        }
    }

    /// Brings the device's copy up to date from the changes feed, after sending the waiting writes: what another
    /// device did shows here. Returns what was sent and the changes applied.
    @discardableResult
    public func syncFavorites() async throws(FavoriteMeError) -> SyncReport {
        let sent = await sendPendingWrites()
        var applied: [FavoriteChange] = []
        while true {
            let since = await outbox.load().syncedVersion
            let page: FavoriteChanges
            do {
                page = try await send(Call(method: "GET", path: "/v1/favorites/changes",
                                           query: [URLQueryItem(name: "since", value: String(since))]),
                                      as: FavoriteChanges.self)
            } catch .refused(let problem) where problem.type == .syncPositionAhead && since > 0 {
                // The copy on the device is not of this account's log (another account's, or from before a
                // restore): start it again from the beginning rather than skip what came since.
                await outbox.update { $0.restartSync() }
                applied = []
                continue
            }
            await outbox.update { state in
                for change in page.changes { state.apply(change) }
                state.syncedVersion = max(state.syncedVersion, page.version)
            }
            applied += page.changes
            guard page.hasMore else { return SyncReport(sent: sent, changes: applied) }
        }
    }

    /// The device's copy of one experience's favorites, most recent first (no request; see ``syncFavorites()``).
    public func syncedFavorites(in experience: ExperienceID) async -> [Favorite] {
        (await outbox.load().favorites[experience.rawValue]?.values).map { Array($0) }?
            .sorted { $0.favoritedAt > $1.favoritedAt } ?? []
    }

    /// One page of the favorites as the server has them, in `sort` order (the experience's default when nil),
    /// filtered by `text` (titles, and a card's facts).
    public func favorites(in experience: ExperienceID, sort: ListSort? = nil, matching text: String? = nil,
                          limit: Int? = nil, cursor: String? = nil) async throws(FavoriteMeError) -> FavoritePage
    {
        var query = [URLQueryItem(name: "experience", value: experience.rawValue)]
        if let sort { query.append(URLQueryItem(name: "sort", value: sort.rawValue)) }
        if let text { query.append(URLQueryItem(name: "q", value: text)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        return try await send(Call(method: "GET", path: "/v1/favorites", query: query), as: FavoritePage.self)
    }

    /// The favorited item ids as the server has them.
    public func favoriteIDs(in experience: ExperienceID) async throws(FavoriteMeError) -> FavoriteIDs {
        try await send(Call(method: "GET", path: "/v1/favorites/ids",
                            query: [URLQueryItem(name: "experience", value: experience.rawValue)]), as: FavoriteIDs.self)
    }

    /// The most favorited items of an experience.
    public func popular(in experience: ExperienceID, limit: Int? = nil) async throws(FavoriteMeError) -> [PopularItem] {
        var query = [URLQueryItem(name: "experience", value: experience.rawValue)]
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        return try await send(Call(method: "GET", path: "/v1/favorites/popular", query: query),
                              as: PopularItems.self).items
    }

    // MARK: Writes

    /// A write through the queue: behind writes already waiting (order matters: a favorite then an unfavorite), else
    /// sent now; queued when the server cannot be reached.
    private func write(_ kind: PendingWrite.Kind) async throws(FavoriteMeError) -> WriteResult<Favorite?> {
        guard let user = try await sessions.current()?.user else { throw .signedOut }
        await outbox.own(for: user.id)
        let write = PendingWrite(kind)
        await outbox.update { $0.pending.append(write) }
        let waiting = await outbox.load().pending
        if waiting.count > 1 {
            let report = await sendPendingWrites()
            if let refused = report.refused.first(where: { $0.write.id == write.id }) { throw .refused(refused.problem) }
            if report.sent.contains(where: { $0.id == write.id }) {
                return .done(await outbox.load().favorites[kind.experience.rawValue]?[kind.itemId ?? ""])
            }
            return .queued(write)
        }
        do {
            let answer = try await perform(write)
            await outbox.update { state in
                state.pending.removeAll { $0.id == write.id }
                state.apply(kind, answer: answer)
            }
            return .done(answer)
        } catch .transport {
            return .queued(write)  // stays in the queue, sent later with the same key
        } catch {
            await outbox.update { $0.pending.removeAll { $0.id == write.id } }  // refused: the heart rolls back
            throw error
        }
    }

    /// Sends one write with its key; the favorite it answers with, for favorites and cards.
    private func perform(_ write: PendingWrite) async throws(FavoriteMeError) -> Favorite? {
        let key = ["Idempotency-Key": write.id.uuidString.lowercased()]
        func itemPath(_ experience: ExperienceID, _ itemId: String) -> String {
            "/v1/favorites/\(Self.segment(experience.rawValue))/\(Self.segment(itemId))"
        }
        switch write.kind {
        case .favorite(let experience, let itemId):
            return try await send(Call(method: "PUT", path: itemPath(experience, itemId), headers: key), as: Favorite.self)
        case .unfavorite(let experience, let itemId):
            _ = try await send(Call(method: "DELETE", path: itemPath(experience, itemId), headers: key), as: NoContent.self)
            return nil
        case .clear(let experience):
            _ = try await send(Call(method: "DELETE", path: "/v1/favorites",
                                    query: [URLQueryItem(name: "experience", value: experience.rawValue)], headers: key),
                               as: NoContent.self)
            return nil
        case .writeCard(let experience, let draft):
            return try await send(Call(method: "POST", path: "/v1/favorites/cards",
                                       query: [URLQueryItem(name: "experience", value: experience.rawValue)],
                                       body: try encode(draft), headers: key), as: Favorite.self)
        }
    }
}

extension WriteResult {
    func map<Other: Sendable>(_ transform: (Value) -> Other) -> WriteResult<Other> {
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

extension PendingWrite.Kind {
    var experience: ExperienceID {
        switch self {
        case .favorite(let experience, _), .unfavorite(let experience, _), .clear(let experience),
             .writeCard(let experience, _):
            experience
        }
    }

    var itemId: String? {
        switch self {
        case .favorite(_, let itemId), .unfavorite(_, let itemId): itemId
        case .clear, .writeCard: nil
        }
    }
}
