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
///
/// Every change to a document is saved in the same step of this actor (the store is synchronous), so two writes made
/// at once can never save over each other. A drain (the sending of the queue) holds a token: when the documents
/// close (sign-out, another user), the token dies, and whatever that drain still does touches nothing of the next
/// user's.
actor Outbox {
    private let store: any LocalStore
    let events: Broadcast<LocalEvent>
    /// The user whose documents are open; nil when nobody's are.
    private(set) var owner: UUID?
    private var queue = QueueDocument()
    private var synced = FavoritesDocument()
    /// The one drain under way: whose, its token, and its task (which later calls join).
    private var draining: (owner: UUID, token: UUID, task: Task<DrainReport, Never>)?
    /// Calls waiting to hear what came of their write, and outcomes not yet collected.
    private var waiters: [UUID: CheckedContinuation<WriteOutcome, Never>] = [:]
    private var outcomes: [UUID: WriteOutcome] = [:]
    private var awaited: Set<UUID> = []
    private var scheduled: Task<Void, Never>?
    /// The drain's wait between attempts (with its drain's token), which ``wake()`` cuts short.
    private var pause: (token: UUID, resume: CheckedContinuation<Void, Never>, timer: Task<Void, Never>)?

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
        var reports: [LocalEvent] = []
        let queue = try load(QueueDocument.self, .queue, of: user, reporting: &reports)
        let synced = try load(FavoritesDocument.self, .favorites, of: user, reporting: &reports)
        let folded = Set(synced.folded)
        self.queue = queue
        self.queue.writes.removeAll { folded.contains($0.write.id) && $0.isSent }
        self.synced = synced
        owner = user
        for report in reports { await events.send(report) }
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
        var failure: LocalEvent?
        if owner == user {
            queue.writes.removeAll(where: \.isSent)
            failure = saveQueue()
        }
        do { try store.remove(.favorites, of: user) } catch {
            failure = .saveFailed(.favorites, reason: "the synced copy could not be deleted: \(error)")
        }
        closeDocuments()
        if let failure { await events.send(failure) }
        await events.send(.changed)
    }

    /// Deletes everything of `user` on the device, waiting writes too (their account is gone).
    func erase(_ user: UUID) async {
        if owner == user { closeDocuments() }
        for document in LocalDocument.allCases { try? store.remove(document, of: user) }
        await events.send(.changed)
    }

    private func closeDocuments() {
        owner = nil
        queue = QueueDocument()
        synced = FavoritesDocument()
        scheduled?.cancel()
        scheduled = nil
        draining = nil  // its token dies with it
        wake()
        settleWaiters()
    }

    private func load<Document: Decodable & EmptyDocument>(_ type: Document.Type, _ document: LocalDocument,
                                                           of user: UUID, reporting reports: inout [LocalEvent])
        throws(FavoriteMeError) -> Document
    {
        let data: Data?
        do { data = try store.read(document, of: user) } catch {
            throw .storage("the \(document) on the device could not be read: \(error)")
        }
        guard let data else { return Document() }
        do {
            return try JSONCoding.decoder.decode(type, from: data)
        } catch let decoding {
            do {
                let path = try store.setAside(document, of: user)
                reports.append(.setAside(document, path: path, reason: "\(decoding)"))
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
        queue.writes.append(QueuedWrite(write))
        if case .saveFailed(_, let reason)? = saveQueue() {
            queue.writes.removeAll { $0.write.id == write.id }
            throw .storage("the write could not be saved: \(reason)")
        }
        awaited.insert(write.id)
        await events.send(.changed)
    }

    /// Starts a drain of `user`'s queue, or joins the one under way; `body` gets the drain's token.
    func drain(for user: UUID, _ body: @escaping @Sendable (UUID) async -> DrainReport) async -> DrainReport {
        if let draining, draining.owner == user { return await draining.task.value }
        let token = UUID()
        let task = Task { await body(token) }
        draining = (user, token, task)
        return await task.value
    }

    private func isCurrent(_ token: UUID) -> Bool { draining?.token == token }

    /// What the drain with `token` sends next: the first waiting write, unless the server asked to wait for it (its
    /// `notBefore`, also answered). Nil when there is none, or the drain is over (its documents closed): the drain
    /// then ends, so that a write queued after this starts a new one instead of waiting on one that will not send it.
    func nextToSend(_ token: UUID) -> (write: PendingWrite?, notBefore: Date?) {
        guard isCurrent(token), let next = queue.writes.first(where: { $0.status == .waiting }) else {
            endDrain(token)
            return (nil, nil)
        }
        if let notBefore = next.notBefore, notBefore > Date() {
            endDrain(token)
            return (nil, notBefore)
        }
        return (next.write, nil)
    }

    /// Ends the drain with `token` early (offline, no session for its user, a wait to honour): the writes it did not
    /// send wait, and the calls waiting on them hear so.
    func endDrain(_ token: UUID) {
        guard isCurrent(token) else { return }
        draining = nil
        settleWaiters()
    }

    func markSent(_ write: PendingWrite, answer: Favorite?, _ token: UUID) async {
        guard isCurrent(token) else { return }
        settle(write.id, .sent(answer))
        await change(write.id) { $0.status = .sent(answer: answer) }
    }

    func drop(_ write: PendingWrite, refusedWith problem: APIProblem, _ token: UUID) async {
        guard isCurrent(token) else { return }
        queue.writes.removeAll { $0.write.id == write.id }
        settle(write.id, .refused(problem))
        let failure = saveQueue()
        if let failure { await events.send(failure) }
        await events.send(.refused(write, problem))
        await events.send(.changed)
    }

    /// Counts a failed attempt (and the server's wait, when it gave one beyond what a drain waits for); the failures
    /// so far, nil when the drain is over.
    func recordFailure(of write: PendingWrite, notBefore: Date?, _ token: UUID) async -> Int? {
        guard isCurrent(token) else { return nil }
        settle(write.id, .waiting)
        await change(write.id) {
            $0.failures += 1
            $0.notBefore = notBefore
        }
        return queue.writes.first { $0.write.id == write.id }?.failures
    }

    func park(_ write: PendingWrite, reason: String, _ token: UUID) async {
        guard isCurrent(token) else { return }
        settle(write.id, .parked(reason: reason))
        await change(write.id) { $0.status = .parked(reason: reason) }
        await events.send(.parked(write, reason: reason))
    }

    /// Puts the parked writes back at the end of the queue with their failures forgotten, as if made now (their
    /// keys unchanged: one the server did apply is not applied again).
    func unpark() async {
        let parked = queue.writes.filter(\.isParked)
        queue.writes.removeAll(where: \.isParked)
        queue.writes += parked.map { QueuedWrite($0.write) }
        if let failure = saveQueue() { await events.send(failure) }
        await events.send(.changed)
    }

    func discardParked() async {
        queue.writes.removeAll(where: \.isParked)
        if let failure = saveQueue() { await events.send(failure) }
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

    /// The drain with `token` waits `seconds` before its next attempt, unless woken first.
    func pause(for seconds: TimeInterval, _ token: UUID) async {
        guard isCurrent(token) else { return }
        settleWaiters()
        wake()  // never two pauses: one drain at a time waits
        await withCheckedContinuation { resume in
            let timer = Task { [weak self] in
                do { try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000)) } catch { return }
                await self?.wake(token)
            }
            pause = (token, resume, timer)
        }
    }

    /// Ends the drain's wait now: the app asked to send, or the network returned.
    func wake() {
        guard let pause else { return }
        self.pause = nil
        pause.timer.cancel()
        pause.resume.resume()
    }

    /// Ends the wait of the drain with `token` (its timer ran out).
    private func wake(_ token: UUID) {
        if pause?.token == token { wake() }
    }

    /// Runs `flush` after `delay` (one such at a time, cancelled when the documents close).
    func schedule(after delay: TimeInterval, _ flush: @escaping @Sendable () async -> Void) {
        scheduled?.cancel()
        scheduled = Task {
            do { try await Task.sleep(nanoseconds: UInt64(max(0, delay) * 1_000_000_000)) } catch { return }
            await flush()
        }
    }

    // MARK: Reading

    /// The failed attempts of `write` so far.
    func failures(of write: PendingWrite) -> Int { queue.writes.first { $0.write.id == write.id }?.failures ?? 0 }

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

    // MARK: Syncing: each step for one user, a no-op (false) once that user's documents closed

    /// The position `user`'s sync goes on from, and the sent writes it will find in the feed; nil when another
    /// user's documents are open.
    func syncStart(for user: UUID) -> (since: Int64, sent: [UUID])? {
        guard owner == user else { return nil }
        return (synced.version, queue.writes.filter(\.isSent).map(\.write.id))
    }

    func apply(_ changes: [FavoriteChange], upTo version: Int64, for user: UUID) -> Bool {
        guard owner == user else { return false }
        for change in changes { synced.apply(change) }
        synced.version = max(synced.version, version)
        return true
    }

    /// Forgets `user`'s copy and its position, for a sync from the beginning.
    func restartSync(for user: UUID) -> Bool {
        guard owner == user else { return false }
        synced = FavoritesDocument()
        return true
    }

    /// Saves the copy `user`'s sync brought, with the sent writes it now includes, then trims those from the queue.
    func finishSync(folding sent: [UUID], for user: UUID) async -> Bool {
        guard owner == user else { return false }
        synced.folded = sent
        do { try save(synced, as: .favorites) } catch {
            await events.send(.saveFailed(.favorites, reason: "\(error)"))
            return true
        }
        let folded = Set(sent)
        queue.writes.removeAll { folded.contains($0.write.id) && $0.isSent }
        if let failure = saveQueue() { await events.send(failure) }
        await events.send(.changed)
        return true
    }

    // MARK: Saving

    private func change(_ id: UUID, _ edit: (inout QueuedWrite) -> Void) async {
        guard let index = queue.writes.firstIndex(where: { $0.write.id == id }) else { return }
        edit(&queue.writes[index])
        if let failure = saveQueue() { await events.send(failure) }
        await events.send(.changed)
    }

    /// Saves the queue as it is now; the failure to report, if any. After the server answered, a failure loses
    /// nothing: the next save writes the change, and a write still waiting on disk is sent again with its key, which
    /// the server answers without applying it twice.
    private func saveQueue() -> LocalEvent? {
        do {
            try save(queue, as: .queue)
            return nil
        } catch {
            return .saveFailed(.queue, reason: "\(error)")
        }
    }

    private func save(_ document: some Encodable, as kind: LocalDocument) throws {
        guard let owner else { throw FavoriteMeError.signedOut }
        try store.write(try JSONCoding.encoder.encode(document), to: kind, of: owner)
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
