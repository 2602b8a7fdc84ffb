import Contracts
import Foundation

/// The synced copy on disk: the copy as of its last compaction (``LocalDocument/favorites``) and the journal of the
/// syncs since (``LocalDocument/journal``), and what the copy in memory has that neither has yet.
struct JournalState: Sendable {
    /// The size of the saved copy and of the journal, in bytes: the journal is folded into the copy once it is as
    /// large as the copy (so the copy is rewritten once per its own size of journal: a bounded cost per change).
    var copyBytes = 0
    var journalBytes = 0
    /// The journal's end may be a torn line (a crash, a failed append): the next save rewrites the copy instead.
    var needsCompaction = false
    /// Changes applied since the last save, and whether the copy was emptied first.
    var unsaved: [FavoriteChange] = []
    var restarted = false

    /// Below this the journal is never folded: tens of lines cost nothing to replay.
    static let smallestCompaction = 64 * 1024

    func needsCompaction(adding line: Int) -> Bool {
        needsCompaction || journalBytes + line > max(Self.smallestCompaction, copyBytes)
    }
}

extension Outbox {
    /// The synced copy of `user`: the saved copy with the journal replayed on top. A journal that cannot be read is
    /// set aside like any damaged document: the copy is then as of its last compaction, and the next sync brings
    /// what the journal had from the server again. A copy or journal of an earlier format (``OlderFormat``: favorites
    /// of an earlier shape) is dropped instead: the copy starts empty, is saved so at once (the journal emptied), and
    /// the next sync, from the beginning of the feed, brings every favorite in the present shape.
    func loadCopy(of user: UUID, reporting reports: inout [LocalEvent]) throws(FavoriteMeError)
        -> (FavoritesDocument, JournalState)
    {
        var state = JournalState()
        var copy = FavoritesDocument()
        let older = (FavoritesDocument(), JournalState(needsCompaction: true))
        if let data = try read(.favorites, of: user) {
            do {
                copy = try JSONCoding.decoder.decode(FavoritesDocument.self, from: data)
                state.copyBytes = data.count
            } catch is OlderFormat {
                return older
            } catch {
                try setAside(.favorites, of: user, because: error, reporting: &reports)
            }
        }
        guard let journal = try read(.journal, of: user) else { return (copy, state) }
        do {
            let entries = try JournalEntry.entries(in: journal)
            for entry in entries { copy.replay(entry) }
            state.journalBytes = journal.count
            state.needsCompaction = journal.last != UInt8(ascii: "\n") && !journal.isEmpty
        } catch is OlderFormat {
            return older
        } catch {
            try setAside(.journal, of: user, because: error, reporting: &reports)
        }
        return (copy, state)
    }

    /// Saves what the last sync changed: one journal line, or the whole copy when the journal has grown as large.
    func saveCopy(folding sent: [UUID]) -> LocalEvent? {
        let entry = JournalEntry(restart: journal.restarted, changes: journal.unsaved, version: synced.version,
                                 folded: sent)
        journal.unsaved = []
        journal.restarted = false
        guard let owner else { return nil }
        let line: Data
        do { line = try entry.line() } catch { return .saveFailed(.journal, reason: "\(error)") }
        if journal.needsCompaction(adding: line.count) { return compact() }
        do {
            try store.append(line, to: .journal, of: owner)
            journal.journalBytes += line.count
            return nil
        } catch {
            journal.needsCompaction = true  // part of the line may be there: never append after it
            return .saveFailed(.journal, reason: "\(error)")
        }
    }

    /// Writes the whole copy and empties the journal (the copy first: replaying a journal twice changes nothing).
    func compact() -> LocalEvent? {
        guard let owner else { return nil }
        do {
            let data = try JSONCoding.encoder.encode(synced)
            try store.write(data, to: .favorites, of: owner)
            try store.remove(.journal, of: owner)
            journal.copyBytes = data.count
            journal.journalBytes = 0
            journal.needsCompaction = false
            return nil
        } catch {
            journal.needsCompaction = true
            return .saveFailed(.favorites, reason: "\(error)")
        }
    }

    // MARK: Reading

    /// The synced copy with the sent writes on top.
    private var copy: FavoritesDocument {
        var copy = synced
        for entry in queue.writes {
            if case .sent(let answer) = entry.status { copy.apply(entry.write.kind, answer: answer) }
        }
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
        journal.unsaved += changes
        synced.version = max(synced.version, version)
        return true
    }

    /// Forgets `user`'s copy and its position, for a sync from the beginning.
    func restartSync(for user: UUID) -> Bool {
        guard owner == user else { return false }
        synced = FavoritesDocument()
        journal.unsaved = []
        journal.restarted = true
        return true
    }

    /// Saves the copy `user`'s sync brought, with the sent writes it now includes, then trims those from the queue.
    func finishSync(folding sent: [UUID], for user: UUID) async -> Bool {
        guard owner == user else { return false }
        // Nothing to save when the sync brought nothing and the copy already counts these writes as folded.
        let unchanged = journal.unsaved.isEmpty && !journal.restarted && Set(sent).isSubset(of: synced.folded)
        if !unchanged {
            synced.folded = sent
            if let failure = saveCopy(folding: sent) {
                await events.send(failure)
                return true
            }
        }
        let folded = Set(sent)
        let before = queue.writes.count
        queue.writes.removeAll { folded.contains($0.write.id) && $0.isSent }
        if queue.writes.count != before, let failure = saveQueue() { await events.send(failure) }
        if !unchanged || queue.writes.count != before { await events.send(.changed) }
        return true
    }
}
