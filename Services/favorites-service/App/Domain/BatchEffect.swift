import Contracts
import Foundation

/// What a batch of events does to the views, as sets: the removals (applied to the rows there before the batch),
/// and for each favorite the batch leaves in place, the event that added it. Applying these two sets gives what
/// applying the events one by one gives, so a projection spends two statements on a batch instead of one per event.
struct BatchEffect: Equatable {
    struct Removal: Encodable, Equatable {
        /// `removed`, `cleared` (an experience) or `erased` (the user).
        var kind: String
        var user: UUID
        var experience: String?
        var itemId: String?
    }

    struct Addition: Equatable {
        var user: UUID
        var favorite: FavoriteSnapshot
        var version: Int64
        var at: Date
    }

    var removals: [Removal] = []
    /// Per favorite, the first add after its last removal in the batch (an add of a favorite already kept changes
    /// nothing, as one by one), in the batch's order.
    var additions: [Addition] = []
    /// Per item, the last add of it in the batch (any user): the title, subtitle and image everyone's list shows.
    var latestAdds: [FavoriteSnapshot] = []

    private struct Key: Hashable {
        var user: UUID
        var experience: String
        var itemId: String?
    }

    /// `events`: each user's event, in log order.
    init(_ events: [(user: UUID, event: FavoriteEvent, version: Int64, at: Date)]) {
        var erased = Set<UUID>()
        var cleared = Set<Key>()
        var removed = Set<Key>()
        var decided = Set<Key>()
        var chosen: [Key: (order: Int, addition: Addition)] = [:]
        var latest: [String: FavoriteSnapshot] = [:]
        var latestOrder: [String] = []
        for (order, entry) in events.enumerated().reversed() {
            switch entry.event {
            case .added(let favorite), .cardWritten(let favorite):
                if favorite.written != true {
                    let item = favorite.experience + "\u{0}" + favorite.itemId
                    if latest[item] == nil {
                        latest[item] = favorite
                        latestOrder.append(item)
                    }
                }
                let key = Key(user: entry.user, experience: favorite.experience, itemId: favorite.itemId)
                guard !decided.contains(key) else { continue }
                // A later removal covers this add and every earlier one.
                if erased.contains(entry.user) || removed.contains(key)
                    || cleared.contains(Key(user: entry.user, experience: favorite.experience, itemId: nil)) {
                    decided.insert(key)
                    continue
                }
                chosen[key] = (order, Addition(user: entry.user, favorite: favorite, version: entry.version,
                                                at: entry.at))
            case .removed(let experience, let itemId):
                removed.insert(Key(user: entry.user, experience: experience.rawValue, itemId: itemId))
                removals.append(Removal(kind: "removed", user: entry.user, experience: experience.rawValue,
                                        itemId: itemId))
            case .cleared(let experience):
                cleared.insert(Key(user: entry.user, experience: experience.rawValue, itemId: nil))
                removals.append(Removal(kind: "cleared", user: entry.user, experience: experience.rawValue))
            case .erased:
                erased.insert(entry.user)
                removals.append(Removal(kind: "erased", user: entry.user))
            case .confirmed:
                continue
            }
        }
        removals.reverse()
        additions = chosen.values.sorted { $0.order < $1.order }.map(\.addition)
        latestAdds = latestOrder.reversed().compactMap { latest[$0] }
    }
}
