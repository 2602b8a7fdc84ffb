#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`: the one lock of this project, used instead of `Synchronization.Mutex`.
///
/// Why not `Mutex`: on Linux it takes its owner's thread id from a thread-local that its header inlines into every
/// caller, and Swift 6.3's optimiser may compute that thread-local's address once per async function. A function
/// that locks, awaits, resumes on another thread and locks again then uses the first thread's id. In a release build
/// whose database sessions run on their own executor, this crashed with "Call to unlock Mutex on a thread which
/// hasn't acquired the lock". libc's mutex finds the calling thread inside its own, never-inlined code.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    // @usableFromInline and @inlinable: a lock costs a call into libc and nothing more, even across modules.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. `body` must not suspend or take this lock again.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
