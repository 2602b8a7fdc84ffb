import Contracts
import Foundation

/// A write in the device's queue, and where it stands.
struct QueuedWrite: Codable, Sendable, Equatable {
    enum Status: Codable, Sendable, Equatable {
        /// Not yet applied by the server, as far as the device knows.
        case waiting
        /// Applied (with the favorite the server answered, for a favorite or a card); kept until a sync has brought
        /// the same change into the synced copy.
        case sent(answer: Favorite?)

        // Earlier versions also had `parked` (given up on after failing too often): such a write is read as waiting,
        // in its place in the queue, and is sent in its turn. An answer in the favorite's earlier shape (before it
        // was its item, time and version) is dropped, not the queue: the next sync brings the favorite.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if container.contains(.sent) {
                let answer = try container.nestedContainer(keyedBy: SentCodingKeys.self, forKey: .sent)
                self = .sent(answer: try? answer.decodeIfPresent(Favorite.self, forKey: .answer))
            } else {
                self = .waiting
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .waiting:
                _ = container.nestedContainer(keyedBy: SentCodingKeys.self, forKey: .waiting)
            case .sent(let answer):
                var sent = container.nestedContainer(keyedBy: SentCodingKeys.self, forKey: .sent)
                try sent.encodeIfPresent(answer, forKey: .answer)
            }
        }

        private enum CodingKeys: String, CodingKey { case waiting, sent }
        private enum SentCodingKeys: String, CodingKey { case answer }
    }

    var write: PendingWrite
    var status: Status = .waiting
    /// Attempts in a row that failed on the way or on the server: how long the next wait is.
    var failures = 0
    /// Not to be sent before: the server's `Retry-After`, honoured by every send, a relaunch's too.
    var notBefore: Date?

    init(_ write: PendingWrite) { self.write = write }

    // Every field but the write itself may be missing (a document from an older version): a new field must never
    // make a queue unreadable.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        write = try container.decode(PendingWrite.self, forKey: .write)
        status = try container.decodeIfPresent(Status.self, forKey: .status) ?? .waiting
        failures = try container.decodeIfPresent(Int.self, forKey: .failures) ?? 0
        notBefore = try container.decodeIfPresent(Date.self, forKey: .notBefore)
    }
}

/// A document written by a newer version of the client: kept aside rather than overwritten.
struct NewerDocumentFormat: Error, CustomStringConvertible {
    var found: Int
    var known: Int
    var description: String { "format \(found), newer than this version's \(known)" }
}

/// A synced copy or journal written before favorites took their present shape (their item, time and version): it is
/// only a copy of the server's, so it is dropped and synced again, never set aside as damaged.
struct OlderFormat: Error {}

/// The user's queue, versioned. Format 1 is this one; a document without a format is the single file of earlier
/// versions (`{"owner", "pending", "syncedVersion", "favorites"}`), whose `pending` writes are taken as waiting.
struct QueueDocument: Codable, Sendable, Equatable {
    static let format = 1
    var writes: [QueuedWrite] = []

    init() {}

    private enum CodingKeys: String, CodingKey { case format, writes, pending }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let format = try container.decodeIfPresent(Int.self, forKey: .format) else {
            writes = try container.decodeIfPresent([PendingWrite].self, forKey: .pending)?.map(QueuedWrite.init) ?? []
            return
        }
        guard format <= Self.format else { throw NewerDocumentFormat(found: format, known: Self.format) }
        writes = try container.decode([QueuedWrite].self, forKey: .writes)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.format, forKey: .format)
        try container.encode(writes, forKey: .writes)
    }
}

/// The favorites as last synced, versioned like ``QueueDocument``. Format 2: favorites of their present shape
/// (``Favorite``: item, time, version). A copy of an earlier format (1, or the earlier single file without one) holds
/// favorites of an earlier shape: it is read as ``OlderFormat``, and dropped (see ``Outbox/loadCopy(of:reporting:)``).
struct FavoritesDocument: Codable, Sendable, Equatable {
    static let format = 2
    /// The position in the user's changes feed (`since` for the next sync).
    var version: Int64 = 0
    /// By experience, then item id.
    var favorites: [String: [String: Favorite]] = [:]
    /// The sent writes this copy already includes: a queue saved before them is trimmed of them when read.
    var folded: [UUID] = []

    init() {}

    private enum CodingKeys: String, CodingKey { case format, version, favorites, folded }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let format = try container.decodeIfPresent(Int.self, forKey: .format) ?? 0
        guard format <= Self.format else { throw NewerDocumentFormat(found: format, known: Self.format) }
        guard format == Self.format else { throw OlderFormat() }
        favorites = try container.decodeIfPresent([String: [String: Favorite]].self, forKey: .favorites) ?? [:]
        version = try container.decodeIfPresent(Int64.self, forKey: .version) ?? 0
        folded = try container.decodeIfPresent([UUID].self, forKey: .folded) ?? []
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.format, forKey: .format)
        try container.encode(version, forKey: .version)
        try container.encode(favorites, forKey: .favorites)
        try container.encode(folded, forKey: .folded)
    }

    /// A write the server applied.
    mutating func apply(_ write: PendingWrite.Kind, answer: Favorite?) {
        switch write {
        case .favorite(let experience, let itemId):
            if let answer { favorites[experience.rawValue, default: [:]][itemId] = answer }
        case .writeCard(let experience, _):
            if let answer { favorites[experience.rawValue, default: [:]][answer.item.id] = answer }
        case .unfavorite(let experience, let itemId):
            favorites[experience.rawValue]?[itemId] = nil
        case .clear(let experience):
            favorites[experience.rawValue] = nil
        }
    }

    /// A change from the feed.
    mutating func apply(_ change: FavoriteChange) {
        switch change.kind {
        case .added:
            if let favorite = change.favorite, let itemId = change.itemId {
                favorites[change.experience.rawValue, default: [:]][itemId] = favorite
            }
        case .removed:
            if let itemId = change.itemId { favorites[change.experience.rawValue]?[itemId] = nil }
        case .cleared:
            favorites[change.experience.rawValue] = nil
        }
        version = max(version, change.version)
    }
}

/// One sync's changes to the synced copy, appended to the user's journal (``LocalDocument/journal``, one JSON object a
/// line) rather than saved by rewriting the whole copy: a sync, the echo of the user's own heart included, costs as
/// many bytes as it changes. The journal is folded into the copy (and emptied) once it outgrows it.
///
/// Replaying an entry twice changes nothing (each change sets or removes an item), so a crash between saving a
/// compacted copy and emptying the journal loses nothing and adds nothing.
struct JournalEntry: Codable, Sendable, Equatable {
    /// Format 2: favorites of their present shape; an entry of an earlier format is read as ``OlderFormat``.
    static let format = 2
    /// The sync started again from the beginning of the feed (the copy was not of this account's log): the copy
    /// was emptied before these changes.
    var restart = false
    var changes: [FavoriteChange]
    /// The position in the changes feed after this sync.
    var version: Int64
    /// The sent writes the copy includes from now on (see ``FavoritesDocument/folded``).
    var folded: [UUID]

    init(restart: Bool, changes: [FavoriteChange], version: Int64, folded: [UUID]) {
        self.restart = restart
        self.changes = changes
        self.version = version
        self.folded = folded
    }

    private enum CodingKeys: String, CodingKey { case format, restart, changes, version, folded }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let format = try container.decode(Int.self, forKey: .format)
        guard format <= Self.format else { throw NewerDocumentFormat(found: format, known: Self.format) }
        guard format == Self.format else { throw OlderFormat() }
        restart = try container.decodeIfPresent(Bool.self, forKey: .restart) ?? false
        changes = try container.decodeIfPresent([FavoriteChange].self, forKey: .changes) ?? []
        version = try container.decode(Int64.self, forKey: .version)
        folded = try container.decodeIfPresent([UUID].self, forKey: .folded) ?? []
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.format, forKey: .format)
        if restart { try container.encode(restart, forKey: .restart) }
        try container.encode(changes, forKey: .changes)
        try container.encode(version, forKey: .version)
        try container.encode(folded, forKey: .folded)
    }

    /// The entries of a journal's bytes, in order. A last line without its newline was cut off by a crash during its
    /// append and is left out (the copy is then a sync behind, which the next sync makes up); any other line that
    /// cannot be read makes the whole journal unreadable.
    static func entries(in journal: Data) throws -> [JournalEntry] {
        let newline = UInt8(ascii: "\n")
        var lines = journal.split(separator: newline, omittingEmptySubsequences: false)
        if journal.last != newline { lines.removeLast() }  // torn, or the empty rest after the last newline
        return try lines.filter { !$0.isEmpty }.map { try JSONCoding.decoder.decode(JournalEntry.self, from: Data($0)) }
    }

    /// The entry as one journal line.
    func line() throws -> Data {
        var data = try JSONCoding.encoder.encode(self)
        data.append(UInt8(ascii: "\n"))
        return data
    }
}

extension FavoritesDocument {
    /// The copy after `entry`.
    mutating func replay(_ entry: JournalEntry) {
        if entry.restart {
            favorites = [:]
            version = 0
        }
        for change in entry.changes { apply(change) }
        version = max(version, entry.version)
        folded = entry.folded
    }
}
