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

/// The device's copy of the user's favorites and the writes waiting to reach the server, kept in a ``LocalStore``.
///
/// The hearts an app draws are that copy with the waiting writes applied on top, in order: a write shows at once
/// (optimistic), and when the server refuses it, dropping it from the queue is its rollback. The copy belongs to one
/// user: a different user signing in on the device starts from an empty one.
actor Outbox {
    private let store: any LocalStore
    private var state: LocalState?
    /// The one drain under way, which later calls join.
    private var draining: Task<DrainReport, Never>?

    init(store: any LocalStore) {
        self.store = store
    }

    func load() async -> LocalState {
        if let state { return state }
        let loaded = (try? await store.load()) ?? LocalState()
        state = loaded
        return loaded
    }

    func update(_ change: (inout LocalState) -> Void) async {
        var current = await load()
        change(&current)
        state = current
        // A failed save leaves the change in memory: the next save writes it (the session goes on meanwhile).
        try? await store.save(current)
    }

    /// Starts an empty copy unless it already belongs to `user`.
    func own(for user: UUID?) async {
        let current = await load()
        guard current.owner != user else { return }
        var fresh = LocalState()
        fresh.owner = user
        state = fresh
        try? await store.save(fresh)
    }

    func hearts(in experience: ExperienceID) async -> Set<String> {
        let current = await load()
        var hearts = Set(current.favorites[experience.rawValue].map { Array($0.keys) } ?? [])
        for write in current.pending {
            switch write.kind {
            case .favorite(let target, let itemId) where target == experience: hearts.insert(itemId)
            case .unfavorite(let target, let itemId) where target == experience: hearts.remove(itemId)
            case .clear(let target) where target == experience: hearts.removeAll()
            default: break
            }
        }
        return hearts
    }

    /// Runs `body` as the one drain at a time.
    func drain(_ body: @escaping @Sendable () async -> DrainReport) async -> DrainReport {
        if let draining { return await draining.value }
        let task = Task { await body() }
        draining = task
        let report = await task.value
        draining = nil
        return report
    }
}

/// What sending the waiting writes did.
public struct DrainReport: Sendable, Equatable {
    /// Writes the server applied (or had applied: a lost answer's retry), in order.
    public var sent: [PendingWrite] = []
    /// Writes the server refused, with why: dropped from the queue (their hearts rolled back).
    public var refused: [RefusedWrite] = []
    /// Writes still waiting (the server could not be reached).
    public var waiting: Int = 0

    public struct RefusedWrite: Sendable, Equatable {
        public var write: PendingWrite
        public var problem: APIProblem
    }
}

extension LocalState {
    /// A write the server applied, on the device's copy (the changes feed will say the same, harmlessly).
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

    /// Forgets the device's copy of the favorites and its position in the feed, for a sync from the beginning.
    mutating func restartSync() {
        favorites = [:]
        syncedVersion = 0
    }

    /// A change from the feed, on the device's copy.
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
        syncedVersion = max(syncedVersion, change.version)
    }
}
