import Contracts
import Foundation

/// Sending the signed-in user's queue: one pass at a time, in order, each write with its own key.
///
/// A write the server refuses for good (a 4xx: not found, invalid, over the limit) leaves the queue, its heart rolled
/// back, and the app is told why (``LocalEvent/refused(_:_:)``). Anything else that goes wrong (no network, a
/// timeout, a dropped connection, a 5xx, a captive portal's page) leaves the write where it is, its heart drawn, and
/// the queue is sent again after a capped backoff (``RetryPolicy``), at once when the network returns or the app
/// comes to the foreground, and at the next launch. Order is kept whatever fails, so a later unfavorite of an item
/// always lands after the favorite before it.
extension FavoriteMeClient {
    /// Sends the waiting writes now, in order, until none is left or one fails on the way (then the queue is sent
    /// again after a backoff, as ``RetryPolicy`` says). Cuts short a backoff under way; honours a wait the server
    /// asked for (`Retry-After`, kept with the write). Concurrent calls share one pass.
    @discardableResult
    public func sendPendingWrites() async -> DrainReport {
        guard let user = await openCurrentUser() else {
            await outbox.settleWaiters()  // a write that was waiting for this pass waits on
            return DrainReport(waiting: await outbox.waiting.count)
        }
        return await outbox.pass(for: user) { [self] token in
            await backgroundActivity.run("Send favorites") { [self] in await pass(for: user, token) }
        }
    }

    /// The network is back: the queue goes out now, and the live changes streams reconnect at once instead of
    /// waiting out their backoff. On Apple platforms the client hears it from the system's path monitor itself;
    /// elsewhere (or with `watchesNetwork: false`) the app calls this.
    public func networkDidReturn() async {
        await wakeup.wakeAll()
        await sendPendingWrites()
    }

    /// The app came to the foreground (a scene became active): as when the network returns, what waited goes out
    /// now and the live changes reconnect, since the network may have come back while the app was suspended.
    public func appDidBecomeActive() async {
        await wakeup.wakeAll()
        await sendPendingWrites()
    }

    /// One pass over `owner`'s queue, holding `token`: everything it does to the queue is ignored once the token dies
    /// (the documents closed for a sign-out or another user).
    private func pass(for owner: UUID, _ token: UUID) async -> DrainReport {
        var report = DrainReport()
        while true {
            let (next, notBefore) = await outbox.nextToSend(token)
            guard let write = next else {
                if let notBefore {  // the server asked to wait: the queue goes out again then
                    await outbox.scheduleRetry(at: notBefore) { [self] in await sendPendingWrites() }
                    report.nextAttempt = notBefore
                }
                break
            }
            let verdict: AttemptVerdict
            var answer: Favorite?
            do {
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
            case .stop:
                await outbox.endPass(token)
                report.waiting = await outbox.waiting.count
                return report
            case .retry(let retryAfter):
                report.nextAttempt = await outbox.failed(write, retryAfter: retryAfter, policy: retryPolicy, token) {
                    [self] in await sendPendingWrites()
                }
                report.waiting = await outbox.waiting.count
                return report
            }
        }
        report.waiting = await outbox.waiting.count
        return report
    }

    /// A write through the signed-in user's queue: saved first (a write that cannot be saved throws), then sent in
    /// its turn. Answers when its first attempt is over: done, refused (thrown), or queued for later; at once with
    /// queued while the queue waits out a backoff (a new heart does not cut it short).
    func write(_ kind: PendingWrite.Kind) async throws -> WriteResult<Favorite?> {
        guard let user = try await sessions.current()?.user else { throw FavoriteMeError.signedOut }
        try await outbox.open(for: user.id)
        let write = PendingWrite(kind)
        try await outbox.enqueue(write, for: user.id)
        if await outbox.isBackingOff {
            await outbox.stopAwaiting(write.id)
            return .queued(write)
        }
        Task { await sendPendingWrites() }
        switch await outbox.outcome(of: write.id) {
        case .sent(let answer): return .done(answer)
        case .refused(let problem): throw FavoriteMeError.refused(problem)
        case .waiting: return .queued(write)
        }
    }

    /// Sends one write of `owner` with its key; the favorite it answers with, for favorites and cards.
    private func perform(_ write: PendingWrite, for owner: UUID) async throws -> Favorite? {
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
            let query = [URLQueryItem(name: "experience", value: experience.rawValue)]
            _ = try await send(Call(method: "DELETE", path: "/v1/favorites", query: query, headers: key),
                               as: NoContent.self, for: owner)
            return nil
        case .writeCard(let experience, let draft):
            return try await send(Call(method: "POST", path: "/v1/favorites/cards",
                                       query: [URLQueryItem(name: "experience", value: experience.rawValue)],
                                       body: try encode(draft), headers: key), as: Favorite.self, for: owner)
        }
    }
}
