import Contracts
import Foundation
import Locking

/// Items looked up in catalog-proxy in the last `lifetime`, for every user of this replica: a favorite of an item
/// someone just favorited (or that this user favorites again) takes its snapshot from here rather than from another
/// HTTP hop to the catalog. The catalog keeps its own details for minutes, so a copy of seconds adds no staleness a
/// user could see; an item the catalog no longer has is still refused once the copy has expired.
final class RecentItems: Sendable {
    private struct Key: Hashable {
        var experience: ExperienceID
        var id: String
    }

    private let entries = Locked<[Key: (item: FavoritesWriteStatements.EncodedSnapshot, until: ContinuousClock.Instant)]>([:])
    let lifetime: Duration
    /// Bound on the copies kept: past it, the expired ones go, and if that is not enough, all of them.
    let capacity: Int

    init(lifetime: Duration, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The copy of the item with this id (the catalog's own spelling), if one is fresh.
    func item(_ id: String, in experience: ExperienceID, now: ContinuousClock.Instant = .now)
        -> FavoritesWriteStatements.EncodedSnapshot?
    {
        entries.withLock { entries in
            guard let entry = entries[Key(experience: experience, id: id)], now < entry.until else { return nil }
            return entry.item
        }
    }

    func remember(_ item: FavoritesWriteStatements.EncodedSnapshot, now: ContinuousClock.Instant = .now) {
        guard lifetime > .zero else { return }
        entries.withLock { entries in
            if entries.count >= capacity {
                entries = entries.filter { now < $0.value.until }
                if entries.count >= capacity { entries.removeAll() }
            }
            entries[Key(experience: ExperienceID(rawValue: item.snapshot.experience), id: item.snapshot.itemId)] =
                (item, now + lifetime)
        }
    }
}
