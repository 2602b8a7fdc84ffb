import Locking
import Testing

@Suite struct LockedTests {
    /// Read-modify-write under the lock from many tasks at once loses no update (without the lock, increments
    /// racing on two cores would be lost).
    @Test func concurrentUpdatesAreNotLost() async {
        let counter = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    for _ in 0..<10_000 {
                        counter.withLock { value in
                            let read = value
                            value = read + 1
                        }
                        await Task.yield()
                    }
                }
            }
        }
        #expect(counter.withLock { $0 } == 160_000)
    }

    /// A body that throws leaves the lock free and keeps what it changed before throwing.
    @Test func aThrowingBodyReleasesTheLock() {
        struct Refused: Error {}
        let names = Locked<[String]>([])
        #expect(throws: Refused.self) {
            try names.withLock { names in
                names.append("kept")
                throw Refused()
            }
        }
        #expect(names.withLock { $0 } == ["kept"])
    }

    /// Taking the lock, suspending (and maybe resuming on another thread), then taking it again works from any
    /// thread, and each task's entries stay in its own order: the pattern that crashed with Synchronization.Mutex
    /// in an optimised build.
    @Test func lockingAcrossSuspensionPoints() async {
        let log = Locked<[(task: Int, step: Int)]>([])
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for step in 0..<100 {
                        log.withLock { $0.append((task, 2 * step)) }
                        try? await Task.sleep(for: .microseconds(50))
                        log.withLock { $0.append((task, 2 * step + 1)) }
                    }
                }
            }
        }
        let entries = log.withLock { $0 }
        for task in 0..<8 {
            #expect(entries.filter { $0.task == task }.map(\.step) == Array(0..<200))
        }
    }
}
