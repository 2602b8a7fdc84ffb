import Foundation
import Locking

/// When a replica next deletes a table's expired rows: at most once per `interval`, so that pruning costs one
/// statement now and then, not one per write.
final class PruneSchedule: Sendable {
    let interval: TimeInterval
    private let last = Locked(Date.distantPast)

    init(interval: TimeInterval = 600) {
        self.interval = interval
    }

    /// True at most once per interval (and then counts from now).
    func isDue(now: Date = Date()) -> Bool {
        last.withLock { last in
            guard now.timeIntervalSince(last) >= interval else { return false }
            last = now
            return true
        }
    }
}
