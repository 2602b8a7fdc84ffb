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
        /// Given up on after too many failed attempts: kept, not sent, until the app retries or discards it.
        case parked(reason: String)
    }

    var write: PendingWrite
    var status: Status = .waiting
    /// Attempts that failed on the way or on the server (not those made with no network at all).
    var failures = 0
    /// Not to be sent before: the server's `Retry-After`, when longer than a drain waits.
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

/// The favorites as last synced, versioned like ``QueueDocument`` (the earlier single file has `syncedVersion`).
struct FavoritesDocument: Codable, Sendable, Equatable {
    static let format = 1
    /// The position in the user's changes feed (`since` for the next sync).
    var version: Int64 = 0
    /// By experience, then item id.
    var favorites: [String: [String: Favorite]] = [:]
    /// The sent writes this copy already includes: a queue saved before them is trimmed of them when read.
    var folded: [UUID] = []

    init() {}

    private enum CodingKeys: String, CodingKey { case format, version, favorites, folded, syncedVersion }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        favorites = try container.decodeIfPresent([String: [String: Favorite]].self, forKey: .favorites) ?? [:]
        guard let format = try container.decodeIfPresent(Int.self, forKey: .format) else {
            version = try container.decodeIfPresent(Int64.self, forKey: .syncedVersion) ?? 0
            return
        }
        guard format <= Self.format else { throw NewerDocumentFormat(found: format, known: Self.format) }
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
            if let answer { favorites[experience.rawValue, default: [:]][answer.itemId] = answer }
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
