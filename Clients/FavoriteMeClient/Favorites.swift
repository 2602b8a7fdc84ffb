import Contracts
import Foundation

/// What ``FavoriteMeClient/syncFavorites()`` did: the waiting writes it sent, and the changes it applied.
public struct SyncReport: Sendable, Equatable {
    public var sent: DrainReport
    public var changes: [FavoriteChange]
}

/// What a write to the favorites did: done (with the server's answer); queued, to be sent when the server can be
/// reached or on its next attempt (its heart already drawn); or parked after failing too often (see
/// ``FavoriteMeClient/parkedWrites()``).
public enum WriteResult<Value: Sendable>: Sendable {
    case done(Value)
    case queued(PendingWrite)
    case parked(PendingWrite, reason: String)
}

/// The user's favorites (`/v1/favorites`). Every write goes through the signed-in user's queue (see
/// ``PendingWrite``), online or not, so that writes reach the server in the order they were made, each once.
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
        await openCurrentUser()
        return await outbox.waiting
    }

    /// The writes that failed too often and wait for the app's decision: ``retryParkedWrites()`` or
    /// ``discardParkedWrites()``.
    public func parkedWrites() async -> [PendingWrite] {
        await openCurrentUser()
        return await outbox.parked
    }

    /// Puts the parked writes back at the end of the queue (as if made now, with the same keys) and sends it.
    @discardableResult
    public func retryParkedWrites() async -> DrainReport {
        guard await openCurrentUser() != nil else { return DrainReport() }
        await outbox.unpark()
        return await sendPendingWrites()
    }

    public func discardParkedWrites() async {
        guard await openCurrentUser() != nil else { return }
        await outbox.discardParked()
    }

    /// The signed-in user, with their documents open; nil when nobody is signed in or the documents cannot be read.
    @discardableResult
    func openCurrentUser() async -> UUID? {
        guard let user = try? await sessions.current()?.user, (try? await outbox.open(for: user.id)) != nil else {
            return nil
        }
        return user.id
    }

    /// Sends the signed-in user's waiting writes in order, each with its own key, until none is left or the server
    /// cannot be reached. A write that fails on the way, or that the server cannot take now (408, 429, 5xx), is
    /// retried with backoff as ``retryPolicy`` says, then parked; one the server refuses for good is dropped (its
    /// heart rolls back). Writes made meanwhile join the drain under way. Concurrent calls share one drain, and a
    /// call cuts short its wait between attempts (the user asked, or the network returned); a `Retry-After` longer
    /// than a drain waits is kept with the write and honoured by every later drain.
    @discardableResult
    public func sendPendingWrites() async -> DrainReport {
        await outbox.wake()
        return await drainQueue()
    }

    /// The drain, without cutting its wait short (what a new write starts or joins).
    @discardableResult
    func drainQueue() async -> DrainReport {
        guard let user = await openCurrentUser() else {
            await outbox.settleWaiters()  // a write that was waiting for this drain waits on
            return DrainReport(waiting: await outbox.waiting.count)
        }
        return await outbox.drain(for: user) { [self] token in await drain(for: user, token) }
    }

    /// One drain of `owner`'s queue, holding `token`: everything it does to the queue is ignored once the token dies
    /// (the documents closed for a sign-out or another user).
    private func drain(for owner: UUID, _ token: UUID) async -> DrainReport {
        var report = DrainReport()
        while true {
            let (next, notBefore) = await outbox.nextToSend(token)
            guard let write = next else {
                if let notBefore {  // the server asked to wait: the queue goes out again then
                    await outbox.schedule(after: notBefore.timeIntervalSinceNow) { [self] in await drainQueue() }
                }
                break
            }
            let verdict: AttemptVerdict
            var answer: Favorite?
            do throws(FavoriteMeError) {
                answer = try await perform(write, for: owner)
                verdict = .applied
            } catch {
                verdict = AttemptVerdict(error)
            }
            switch verdict {
            case .applied:
                await outbox.markSent(write, answer: answer, token)
                report.sent.append(write)
            case .rejected(let problem):
                await outbox.drop(write, refusedWith: problem, token)
                report.refused.append(.init(write: write, problem: problem))
            case .offline:
                // No network, or the server is down: uncounted; tried again later (and at once when the system says
                // the network returned).
                await outbox.endDrain(token)
                await outbox.schedule(after: retryPolicy.longestDelay) { [self] in await drainQueue() }
                report.waiting = await outbox.waiting.count
                return report
            case .stop:
                await outbox.endDrain(token)
                report.waiting = await outbox.waiting.count
                return report
            case .retry(let retryAfter):
                let delay = retryPolicy.delay(afterFailures: await outbox.failures(of: write) + 1,
                                              retryAfter: retryAfter, jitter: .random(in: 0...1))
                // A wait longer than a drain waits is kept with the write, so that no drain sends it early.
                let notBefore = delay > retryPolicy.longestDelay ? Date(timeIntervalSinceNow: delay) : nil
                guard let failures = await outbox.recordFailure(of: write, notBefore: notBefore, token) else {
                    return report  // the documents closed meanwhile
                }
                if failures >= retryPolicy.attempts {
                    await outbox.park(write, reason: "failed \(failures) times, the last with \(retryAfter.map { "Retry-After \($0)" } ?? "no answer the API knows")", token)
                    report.parked.append(write)
                    continue
                }
                if notBefore == nil { await outbox.pause(for: delay, token) }
            }
        }
        report.waiting = await outbox.waiting.count
        return report
    }

    /// Brings the device's copy up to date from the changes feed, after sending the waiting writes: what another
    /// device did shows here. Returns what was sent and the changes applied.
    @discardableResult
    public func syncFavorites() async throws(FavoriteMeError) -> SyncReport {
        guard let user = try await sessions.current()?.user else { throw .signedOut }
        try await outbox.open(for: user.id)
        let sent = await sendPendingWrites()
        // Every step is for this user only: if another signs in meanwhile, nothing of this sync lands in their copy.
        guard let start = await outbox.syncStart(for: user.id) else { throw .signedOut }
        var since = start.since
        var applied: [FavoriteChange] = []
        while true {
            let page: FavoriteChanges
            do {
                page = try await send(Call(method: "GET", path: "/v1/favorites/changes",
                                           query: [URLQueryItem(name: "since", value: String(since))]),
                                      as: FavoriteChanges.self, for: user.id)
            } catch .refused(let problem) where problem.type == .syncPositionAhead && since > 0 {
                // The copy on the device is not of this account's log (from before a restore, say): start it again
                // from the beginning rather than skip what came since.
                guard await outbox.restartSync(for: user.id) else { throw .signedOut }
                since = 0
                applied = []
                continue
            }
            guard await outbox.apply(page.changes, upTo: page.version, for: user.id) else { throw .signedOut }
            applied += page.changes
            since = max(since, page.version)
            guard page.hasMore else { break }
        }
        guard await outbox.finishSync(folding: start.sent, for: user.id) else { throw .signedOut }
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

    /// A write through the signed-in user's queue: saved first (a write that cannot be saved throws), then sent in
    /// its turn. Answers when its first attempt is over: done, refused (thrown), or queued for later.
    private func write(_ kind: PendingWrite.Kind) async throws(FavoriteMeError) -> WriteResult<Favorite?> {
        guard let user = try await sessions.current()?.user else { throw .signedOut }
        try await outbox.open(for: user.id)
        let write = PendingWrite(kind)
        try await outbox.enqueue(write, for: user.id)
        Task { await drainQueue() }
        switch await outbox.outcome(of: write.id) {
        case .sent(let answer): return .done(answer)
        case .refused(let problem): throw .refused(problem)
        case .parked(let reason): return .parked(write, reason: reason)
        case .waiting: return .queued(write)
        }
    }

    /// Sends one write of `owner` with its key; the favorite it answers with, for favorites and cards.
    private func perform(_ write: PendingWrite, for owner: UUID) async throws(FavoriteMeError) -> Favorite? {
        let key = ["Idempotency-Key": write.id.uuidString.lowercased()]
        func itemPath(_ experience: ExperienceID, _ itemId: String) -> String {
            "/v1/favorites/\(Self.segment(experience.rawValue))/\(Self.segment(itemId))"
        }
        switch write.kind {
        case .favorite(let experience, let itemId):
            return try await send(Call(method: "PUT", path: itemPath(experience, itemId), headers: key),
                                  as: Favorite.self, for: owner)
        case .unfavorite(let experience, let itemId):
            _ = try await send(Call(method: "DELETE", path: itemPath(experience, itemId), headers: key),
                               as: NoContent.self, for: owner)
            return nil
        case .clear(let experience):
            _ = try await send(Call(method: "DELETE", path: "/v1/favorites",
                                    query: [URLQueryItem(name: "experience", value: experience.rawValue)], headers: key),
                               as: NoContent.self, for: owner)
            return nil
        case .writeCard(let experience, let draft):
            return try await send(Call(method: "POST", path: "/v1/favorites/cards",
                                       query: [URLQueryItem(name: "experience", value: experience.rawValue)],
                                       body: try encode(draft), headers: key), as: Favorite.self, for: owner)
        }
    }
}

extension WriteResult {
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> WriteResult<Other> {
        switch self {
        case .done(let value): .done(transform(value))
        case .queued(let write): .queued(write)
        case .parked(let write, let reason): .parked(write, reason: reason)
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
        case .parked(let write, let reason): return .parked(write, reason: reason)
        }
    }
}
