import Contracts
import Foundation

/// A write to the user's favorites, with the `Idempotency-Key` it is sent with every time (its `id`): however often
/// it is sent, and whatever answers are lost on the way, the server applies it once.
public struct PendingWrite: Codable, Sendable, Hashable, Identifiable {
    public enum Kind: Codable, Sendable, Hashable {
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
    /// Not applied yet: it waits for the network or its next attempt.
    case waiting
}

/// The signed-in user's copy of their favorites and their queue of writes, kept in a ``LocalStore``: one ordered
/// queue per user, which only that user's session ever sends.
///
/// The hearts an app draws are the synced copy with the queue on top, in order: a write shows at once, and a write
/// the server refuses leaves the queue, which is its rollback. A write that fails on the way stays where it is, in
/// order, and the queue is sent again after a backoff: only the server's refusal ever takes a heart back. A sent write
/// stays in the queue until a sync has brought the same change into the copy, so that a heart saves the small queue
/// only, never the copy.
///
/// Every change to a document is saved in the same step of this actor (the store is synchronous), so two writes made
/// at once can never save over each other. A pass (one sending of the queue) holds a token: when the documents close
/// (sign-out, another user), the token dies, and whatever that pass still does touches nothing of the next user's.
actor Outbox {
    let store: any LocalStore
    let events: Broadcast<LocalEvent>
    /// The user whose documents are open; nil when nobody's are.
    private(set) var owner: UUID?
    var queue = QueueDocument()
    var synced = FavoritesDocument()
    /// What the journal holds and what the copy has that neither it nor the saved copy has yet (``Outbox+Copy``).
    var journal = JournalState()
    /// The one pass under way: whose, its token, and its task (which later calls join).
    private var passing: (owner: UUID, token: UUID, task: Task<DrainReport, Never>)?
    /// Calls waiting to hear what came of their write, and outcomes not yet collected.
    private var waiters: [UUID: CheckedContinuation<WriteOutcome, Never>] = [:]
    private var outcomes: [UUID: WriteOutcome] = [:]
    private var awaited: Set<UUID> = []
    /// The next pass, after a backoff or a wait the server asked for (one at a time).
    private var retry: (id: UUID, at: Date, task: Task<Void, Never>)?

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
        let (synced, journal) = try loadCopy(of: user, reporting: &reports)
        let folded = Set(synced.folded)
        self.queue = queue
        self.queue.writes.removeAll { folded.contains($0.write.id) && $0.isSent }
        self.synced = synced
        self.journal = journal
        owner = user
        if journal.needsCompaction, let failure = compact() { reports.append(failure) }
        for report in reports { await events.send(report) }
        await events.send(.changed)
    }

    /// Closes the open documents.
    func close() async {
        closeDocuments()
        await events.send(.changed)
    }

    /// Deletes `user`'s synced copy from the device, and the sent writes that are part of it (sign-out, an ended
    /// session), and closes their documents. Their waiting writes stay on disk: they are sent when that user signs in
    /// again.
    func forgetCopy(of user: UUID) async {
        if owner != user { try? await open(for: user) }
        var failure: LocalEvent?
        if owner == user {
            queue.writes.removeAll(where: \.isSent)
            failure = saveQueue()
        }
        do {
            try store.remove(.journal, of: user)
            try store.remove(.favorites, of: user)
        } catch {
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
        journal = JournalState()
        cancelRetry()
        passing = nil  // its token dies with it
        settleWaiters()
    }

    func load<Document: Decodable & EmptyDocument>(_ type: Document.Type, _ document: LocalDocument,
                                                   of user: UUID, reporting reports: inout [LocalEvent])
        throws(FavoriteMeError) -> Document
    {
        guard let data = try read(document, of: user) else { return Document() }
        do {
            return try JSONCoding.decoder.decode(type, from: data)
        } catch {
            try setAside(document, of: user, because: error, reporting: &reports)
            return Document()
        }
    }

    func read(_ document: LocalDocument, of user: UUID) throws(FavoriteMeError) -> Data? {
        do { return try store.read(document, of: user) } catch {
            throw .storage("the \(document) on the device could not be read: \(error)")
        }
    }

    func setAside(_ document: LocalDocument, of user: UUID, because reason: any Error,
                  reporting reports: inout [LocalEvent]) throws(FavoriteMeError) {
        do {
            let path = try store.setAside(document, of: user)
            reports.append(.setAside(document, path: path, reason: "\(reason)"))
        } catch {
            throw .storage("the \(document) on the device cannot be read (\(reason)) nor moved aside: \(error)")
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

    /// Starts a pass over `user`'s queue, or joins the one under way; `body` gets the pass's token. A pass started
    /// now is also the retry that was scheduled, if any.
    func pass(for user: UUID, _ body: @escaping @Sendable (UUID) async -> DrainReport) async -> DrainReport {
        if let passing, passing.owner == user { return await passing.task.value }
        cancelRetry()
        let token = UUID()
        let task = Task { await body(token) }
        passing = (user, token, task)
        return await task.value
    }

    /// Whether the queue waits out a backoff (its last send failed and no pass is under way): a write made now waits
    /// with it rather than trying again early.
    var isBackingOff: Bool { retry != nil && passing == nil }

    private func isCurrent(_ token: UUID) -> Bool { passing?.token == token }

    /// What the pass with `token` sends next: the first waiting write, unless the server asked to wait for it (its
    /// `notBefore`, also answered). Nil when there is none, or the pass is over (its documents closed): the pass then
    /// ends, so that a write queued after this starts a new one instead of waiting on one that will not send it.
    func nextToSend(_ token: UUID) -> (write: PendingWrite?, notBefore: Date?) {
        guard isCurrent(token), let next = queue.writes.first(where: { $0.status == .waiting }) else {
            endPass(token)
            return (nil, nil)
        }
        if let notBefore = next.notBefore, notBefore > Date() {
            endPass(token)
            return (nil, notBefore)
        }
        return (next.write, nil)
    }

    /// Ends the pass with `token` (a send failed, no session for its user, a wait to honour): the writes it did not
    /// send wait, and the calls waiting on them hear so.
    func endPass(_ token: UUID) {
        guard isCurrent(token) else { return }
        passing = nil
        settleWaiters()
    }

    func markSent(_ write: PendingWrite, answer: Favorite?, _ token: UUID) async {
        guard isCurrent(token) else { return }
        settle(write.id, .sent(answer))
        await change(write.id) {
            $0.status = .sent(answer: answer)
            $0.failures = 0
            $0.notBefore = nil
        }
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

    /// A send of `write` failed on the way: the pass with `token` ends, and the next is scheduled after `policy`'s
    /// backoff, or the server's `Retry-After` (kept with the write: every later pass honours it, a relaunch's too).
    /// All in one step, so that whoever hears that the write waits also finds the retry scheduled. When the next
    /// attempt is due; nil when the pass was over already.
    func failed(_ write: PendingWrite, retryAfter: Int?, policy: RetryPolicy, _ token: UUID,
                send: @escaping @Sendable () async -> Void) async -> Date? {
        guard isCurrent(token), let index = queue.writes.firstIndex(where: { $0.write.id == write.id }) else {
            return nil
        }
        queue.writes[index].failures += 1
        let notBefore = retryAfter.map { Date(timeIntervalSinceNow: TimeInterval($0)) }
        // Saved only when there is a wait to keep: the count only spaces this process's attempts (a relaunch tries
        // at once), so a heart made offline costs one save, not two.
        var failure: LocalEvent?
        if notBefore != nil || queue.writes[index].notBefore != nil {
            queue.writes[index].notBefore = notBefore
            failure = saveQueue()
        }
        let delay = policy.delay(afterFailures: queue.writes[index].failures, retryAfter: retryAfter,
                                 jitter: .random(in: 0...1))
        let due = Date(timeIntervalSinceNow: delay)
        scheduleRetry(at: due, send)
        endPass(token)
        if let failure { await events.send(failure) }
        return due
    }

    /// Runs `send` at `date` (one such at a time, replaced by a later call, cancelled when a pass starts or the
    /// documents close).
    func scheduleRetry(at date: Date, _ send: @escaping @Sendable () async -> Void) {
        cancelRetry()
        let id = UUID()
        let task = Task { [weak self] in
            do { try await Task.sleep(nanoseconds: UInt64(max(0, date.timeIntervalSinceNow) * 1_000_000_000)) } catch {
                return
            }
            guard await self?.takeRetry(id) == true else { return }
            await send()
        }
        retry = (id, date, task)
    }

    /// When the next pass is due, if one is scheduled.
    var nextRetry: Date? { retry?.at }

    private func takeRetry(_ id: UUID) -> Bool {
        guard retry?.id == id else { return false }
        retry = nil
        return true
    }

    private func cancelRetry() {
        retry?.task.cancel()
        retry = nil
    }

    /// What came of `write`: at once if known, else when its first attempt ends or the pass stops before it.
    func outcome(of write: UUID) async -> WriteOutcome {
        if let outcome = outcomes.removeValue(forKey: write) {
            awaited.remove(write)
            return outcome
        }
        guard awaited.contains(write) else { return .waiting }
        return await withCheckedContinuation { waiters[write] = $0 }
    }

    /// The call that made `write` will not ask what came of it (it answered at once).
    func stopAwaiting(_ write: UUID) {
        awaited.remove(write)
        outcomes[write] = nil
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

    // MARK: Reading

    var waiting: [PendingWrite] { queue.writes.filter { $0.status == .waiting }.map(\.write) }
    var syncedVersion: Int64 { synced.version }

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
    func saveQueue() -> LocalEvent? {
        do {
            try save(queue, as: .queue)
            return nil
        } catch {
            return .saveFailed(.queue, reason: "\(error)")
        }
    }

    func save(_ document: some Encodable, as kind: LocalDocument) throws {
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
}

/// What sending the waiting writes did.
public struct DrainReport: Sendable, Hashable {
    /// Writes the server applied (or had applied: a lost answer's retry), in order.
    public var sent: [PendingWrite] = []
    /// Writes the server refused, with why: dropped from the queue (their hearts rolled back).
    public var refused: [RefusedWrite] = []
    /// Writes still waiting (the server could not be reached, or asked to wait).
    public var waiting: Int = 0
    /// When they are tried again, unless the network's return or the app's foreground comes first.
    public var nextAttempt: Date?

    public struct RefusedWrite: Sendable, Hashable {
        public var write: PendingWrite
        public var problem: APIProblem
    }
}
