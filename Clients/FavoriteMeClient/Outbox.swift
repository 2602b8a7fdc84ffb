import Contracts
import Foundation

/// A write to the user's favorites, with the `Idempotency-Key` it is sent with every time (its `id`): however often
/// it is sent, and whatever answers are lost on the way, the server applies it once.
public struct PendingWrite: Codable, Sendable, Equatable, Identifiable {
    public enum Kind: Codable, Sendable, Equatable {
        case favorite(experience: ExperienceID, itemId: String)
        case unfavorite(experience: ExperienceID, itemId: String)
        case clear(experience: ExperienceID)
        case writeCard(experience: ExperienceID, draft: CardDraft)
    }

    public var id: UUID
    public var kind: Kind
    public var madeAt: Date

    public init(_ kind: Kind, id: UUID = UUID(), madeAt: Date = Date()) {
        self.id = id
        self.kind = kind
        self.madeAt = madeAt
    }
}

/// What came of one queued write, for the call that made it.
enum WriteOutcome: Sendable, Equatable {
    case sent(Favorite?)
    case refused(APIProblem)
    case parked(reason: String)
    /// Not applied yet: it waits for the network or its next attempt.
    case waiting
}

/// The signed-in user's copy of their favorites and their queue of writes, kept in a ``LocalStore``: one ordered
/// queue per user, which only that user's session ever sends.
///
/// The hearts an app draws are the synced copy with the queue on top, in order: a write shows at once, and a write
/// the server refuses leaves the queue, which is its rollback. A sent write stays in the queue until a sync has
/// brought the same change into the copy, so that a heart saves the small queue only, never the whole copy.
actor Outbox {
    private let store: any LocalStore
    let events: Broadcast<LocalEvent>
    /// The user whose documents are open; nil when nobody's are.
    private(set) var owner: UUID?
    private var queue = QueueDocument()
    private var synced = FavoritesDocument()
    /// The one drain under way (and whose), which later calls join.
    private var draining: (owner: UUID, task: Task<DrainReport, Never>)?
    /// Calls waiting to hear what came of their write, and outcomes not yet collected.
    private var waiters: [UUID: CheckedContinuation<WriteOutcome, Never>] = [:]
    private var outcomes: [UUID: WriteOutcome] = [:]
    private var awaited: Set<UUID> = []
    private var scheduled: Task<Void, Never>?
    /// The drain's wait between attempts, which ``wake()`` cuts short.
    private var pause: (resume: CheckedContinuation<Void, Never>, timer: Task<Void, Never>)?

    init(store: any LocalStore, events: Broadcast<LocalEvent>) {
        self.store = store
        self.events = events
    }

    // MARK: Opening and closing a user's documents

    /// Opens `user`'s documents unless they are open. A document that cannot be decoded is set aside (kept, reported)
    /// and replaced by an empty one; one that cannot even be read or set aside leaves nothing open, and the write
    /// that needed it fails with ``FavoriteMeError/storage(_:)``.
    func open(for user: UUID) async throws(FavoriteMeError) {
        guard owner != user else { return }
        closeDocuments()
        let queue = try await load(QueueDocument.self, .queue, of: user)
        let synced = try await load(FavoritesDocument.self, .favorites, of: user)
        let folded = Set(synced.folded)
        self.queue = queue
        self.queue.writes.removeAll { folded.contains($0.write.id) && $0.isSent }
        self.synced = synced
        owner = user
        await events.send(.changed)
    }

    /// Closes the open documents.
    func close() async {
        closeDocuments()
        await events.send(.changed)
    }

    /// Deletes `user`'s synced copy from the device, and the sent writes that are part of it (sign-out, an ended
    /// session), and closes their documents. Their waiting and parked writes stay on disk: they are sent when that
    /// user signs in again.
    func forgetCopy(of user: UUID) async {
        if owner != user { try? await open(for: user) }
        if owner == user {
            queue.writes.removeAll(where: \.isSent)
            await saveQueue()
        }
        do { try await store.remove(.favorites, of: user) } catch {
            await events.send(.saveFailed(.favorites, reason: "the synced copy could not be deleted: \(error)"))
        }
        await close()
    }

    /// Deletes everything of `user` on the device, waiting writes too (their account is gone).
    func erase(_ user: UUID) async {
        if owner == user { closeDocuments() }
        for document in LocalDocument.allCases { try? await store.remove(document, of: user) }
        await events.send(.changed)
    }

    private func closeDocuments() {
        owner = nil
        queue = QueueDocument()
        synced = FavoritesDocument()
        scheduled?.cancel()
        scheduled = nil
        wake()
        settleWaiters()
    }

    private func load<Document: Decodable & EmptyDocument>(_ type: Document.Type, _ document: LocalDocument,
                                                           of user: UUID) async throws(FavoriteMeError) -> Document
    {
        let data: Data?
        do { data = try await store.read(document, of: user) } catch {
            throw .storage("the \(document) on the device could not be read: \(error)")
        }
        guard let data else { return Document() }
        do {
            return try JSONCoding.decoder.decode(type, from: data)
        } catch let decoding {
            do {
                let path = try await store.setAside(document, of: user)
                await events.send(.setAside(document, path: path, reason: "\(decoding)"))
                return Document()
            } catch {
                throw .storage("the \(document) on the device cannot be read (\(decoding)) nor moved aside: \(error)")
            }
        }
    }

    // MARK: The queue

    /// Adds a write at the end of the open queue, saved before this returns: a write that could not be saved is an
    /// error, never a write that seems queued.
    func enqueue(_ write: PendingWrite, for user: UUID) async throws(FavoriteMeError) {
        guard owner == user else { throw .signedOut }
        var changed = queue
        changed.writes.append(QueuedWrite(write))
        do { try await save(changed, as: .queue) } catch { throw .storage("the write could not be saved: \(error)") }
        queue = changed
        awaited.insert(write.id)
        await events.send(.changed)
    }

    /// The next write to send for `user`; nil ends the drain under way, so that a write queued after this starts
    /// a new one instead of waiting on a drain that will not send it.
    func nextToSend(for user: UUID) -> PendingWrite? {
        guard owner == user, let next = queue.writes.first(where: { $0.status == .waiting }) else {
            endDrain(for: user)
            return nil
        }
        return next.write
    }

    /// Ends `user`'s drain (early: offline, or no session for that user): the writes it did not send wait.
    func endDrain(for user: UUID) {
        if draining?.owner == user { draining = nil }
        settleWaiters()
    }

    func markSent(_ write: PendingWrite, answer: Favorite?) async {
        await change(write.id) { $0.status = .sent(answer: answer) }
        settle(write.id, .sent(answer))
    }

    func drop(_ write: PendingWrite, refusedWith problem: APIProblem) async {
        queue.writes.removeAll { $0.write.id == write.id }
        await saveQueue()
        settle(write.id, .refused(problem))
        await events.send(.refused(write, problem))
        await events.send(.changed)
    }

    /// Counts a failed attempt; the failures so far.
    func recordFailure(of write: PendingWrite) async -> Int {
        await change(write.id) { $0.failures += 1 }
        settle(write.id, .waiting)
        return queue.writes.first { $0.write.id == write.id }?.failures ?? 0
    }

    func park(_ write: PendingWrite, reason: String) async {
        await change(write.id) { $0.status = .parked(reason: reason) }
        settle(write.id, .parked(reason: reason))
        await events.send(.parked(write, reason: reason))
    }

    /// Puts the parked writes back at the end of the queue with their failures forgotten, as if made now (their
    /// keys unchanged: one the server did apply is not applied again).
    func unpark() async {
        let parked = queue.writes.filter(\.isParked)
        queue.writes.removeAll(where: \.isParked)
        queue.writes += parked.map { QueuedWrite($0.write) }
        await saveQueue()
        await events.send(.changed)
    }

    func discardParked() async {
        queue.writes.removeAll(where: \.isParked)
        await saveQueue()
        await events.send(.changed)
    }

    /// What came of `write`: at once if known, else when its first attempt ends or the drain stops before it. While
    /// the drain waits between attempts, a write waits too: its call does not wait with it.
    func outcome(of write: UUID) async -> WriteOutcome {
        if let outcome = outcomes.removeValue(forKey: write) {
            awaited.remove(write)
            return outcome
        }
        guard awaited.contains(write), pause == nil else {
            awaited.remove(write)
            return .waiting
        }
        return await withCheckedContinuation { waiters[write] = $0 }
    }

    /// The drain waits `seconds` before its next attempt, unless woken first.
    func pause(for seconds: TimeInterval) async {
        settleWaiters()
        await withCheckedContinuation { resume in
            let timer = Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
                await self?.wake()
            }
            pause = (resume, timer)
        }
    }

    /// Ends the drain's wait now: the app asked to send, or the network returned.
    func wake() {
        guard let pause else { return }
        self.pause = nil
        pause.timer.cancel()
        pause.resume.resume()
    }

    private func settle(_ write: UUID, _ outcome: WriteOutcome) {
        guard awaited.contains(write) else { return }
        if let waiter = waiters.removeValue(forKey: write) {
            awaited.remove(write)
            waiter.resume(returning: outcome)
        } else {
            outcomes[write] = outcome
        }
    }

    /// Every call still waiting hears that its write waits.
    func settleWaiters() {
        for id in awaited where outcomes[id] == nil { settle(id, .waiting) }
    }

    /// Runs `body` as the one drain of `user`'s queue at a time (a later call joins it).
    func drain(for user: UUID, _ body: @escaping @Sendable () async -> DrainReport) async -> DrainReport {
        if let draining, draining.owner == user { return await draining.task.value }
        let task = Task { await body() }
        draining = (user, task)
        return await task.value
    }

    /// Runs `flush` after `delay` (one such at a time, cancelled when the documents close).
    func schedule(after delay: TimeInterval, _ flush: @escaping @Sendable () async -> Void) {
        scheduled?.cancel()
        scheduled = Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, delay) * 1_000_000_000))
            guard !Task.isCancelled else { return }
            await flush()
        }
    }

    // MARK: Reading

    var waiting: [PendingWrite] { queue.writes.filter { $0.status == .waiting }.map(\.write) }
    var parked: [PendingWrite] { queue.writes.filter(\.isParked).map(\.write) }
    var syncedVersion: Int64 { synced.version }

    /// The synced copy with the sent writes on top.
    private var copy: FavoritesDocument {
        var copy = synced
        for entry in queue.writes { if case .sent(let answer) = entry.status { copy.apply(entry.write.kind, answer: answer) } }
        return copy
    }

    /// The copy's hearts with the waiting writes on top, in order.
    func hearts(in experience: ExperienceID) -> Set<String> {
        var hearts = Set(copy.favorites[experience.rawValue]?.keys.map { $0 } ?? [])
        for entry in queue.writes where entry.status == .waiting {
            switch entry.write.kind {
            case .favorite(let target, let itemId) where target == experience: hearts.insert(itemId)
            case .unfavorite(let target, let itemId) where target == experience: hearts.remove(itemId)
            case .clear(let target) where target == experience: hearts.removeAll()
            default: break
            }
        }
        return hearts
    }

    func favorites(in experience: ExperienceID) -> [Favorite] {
        (copy.favorites[experience.rawValue]?.values).map(Array.init) ?? []
    }

    // MARK: Syncing

    /// The sent writes a sync beginning now will find in the feed.
    var sentWrites: [UUID] { queue.writes.filter(\.isSent).map(\.write.id) }

    func apply(_ changes: [FavoriteChange], upTo version: Int64) {
        for change in changes { synced.apply(change) }
        synced.version = max(synced.version, version)
    }

    /// Forgets the copy and its position, for a sync from the beginning.
    func restartSync() {
        synced = FavoritesDocument()
    }

    /// Saves the copy a sync brought, with the sent writes it now includes, then trims those from the queue.
    func finishSync(folding sent: [UUID]) async {
        synced.folded = sent
        do { try await save(synced, as: .favorites) } catch {
            await events.send(.saveFailed(.favorites, reason: "\(error)"))
            return
        }
        let folded = Set(sent)
        queue.writes.removeAll { folded.contains($0.write.id) && $0.isSent }
        await saveQueue()
        await events.send(.changed)
    }

    // MARK: Saving

    private func change(_ id: UUID, _ edit: (inout QueuedWrite) -> Void) async {
        guard let index = queue.writes.firstIndex(where: { $0.write.id == id }) else { return }
        edit(&queue.writes[index])
        await saveQueue()
        await events.send(.changed)
    }

    /// Saves the queue after the server answered: a failure is reported, and the next save writes the change (a
    /// write still waiting on disk is sent again with its key, which the server answers without applying it twice).
    private func saveQueue() async {
        do { try await save(queue, as: .queue) } catch { await events.send(.saveFailed(.queue, reason: "\(error)")) }
    }

    private func save(_ document: some Encodable, as kind: LocalDocument) async throws {
        guard let owner else { throw FavoriteMeError.signedOut }
        try await store.write(try JSONCoding.encoder.encode(document), to: kind, of: owner)
    }
}

/// A document a user has none of yet.
protocol EmptyDocument { init() }
extension QueueDocument: EmptyDocument {}
extension FavoritesDocument: EmptyDocument {}

extension QueuedWrite {
    var isSent: Bool { if case .sent = status { true } else { false } }
    var isParked: Bool { if case .parked = status { true } else { false } }
}

/// What sending the waiting writes did.
public struct DrainReport: Sendable, Equatable {
    /// Writes the server applied (or had applied: a lost answer's retry), in order.
    public var sent: [PendingWrite] = []
    /// Writes the server refused, with why: dropped from the queue (their hearts rolled back).
    public var refused: [RefusedWrite] = []
    /// Writes that failed too often and were parked (see ``FavoriteMeClient/parkedWrites()``).
    public var parked: [PendingWrite] = []
    /// Writes still waiting (the server could not be reached, or asked to wait).
    public var waiting: Int = 0

    public struct RefusedWrite: Sendable, Equatable {
        public var write: PendingWrite
        public var problem: APIProblem
    }
}
