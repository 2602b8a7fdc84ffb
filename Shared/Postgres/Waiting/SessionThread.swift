import CLibpq
import Foundation
import Locking

/// The thread of one PostgreSQL session: the session's serial executor, and the one place it waits for its server.
///
/// Everything the session does runs here, one job after another, so a wait for the server may simply block in
/// `poll`: the thread belongs to the session, and nothing else is held up by it. A transaction body runs here too
/// (it is isolated to the session), so its round trips cost no hand-off between threads; a caller elsewhere pays
/// one hop there and one back per call.
///
/// Why a thread per session rather than one event loop shared by many sessions: measured end to end through the
/// gateway, the shared loop was no faster (docs/benchmarks.md, "The database driver's threads"), and it needed
/// edge-triggered readiness bookkeeping, session placement and executor preferences to get there.
public final class SessionThread: SerialExecutor, @unchecked Sendable {  // mutable state only behind `state`
    /// What a wait waits for.
    public enum Interest: Sendable {
        /// The server sent something (or closed the connection).
        case readable
        /// Readable, or room to send again (libpq's outgoing buffer did not fit in the socket's).
        case readableOrWritable
    }

    private struct State: @unchecked Sendable {  // UnownedJob is not Sendable; jobs only cross here, under the lock
        var jobs: [UnownedJob] = []
        /// The thread found no job and sleeps on `wakeUp`: a new job must write to it.
        var sleeping = false
        var stopping = false
        /// ``interrupt()`` came and no interruptible wait has ended on it yet.
        var interrupted = false
        /// The thread has ended and closed `wakeUp`, whose number may belong to another descriptor by now.
        var ended = false
    }

    private let state = Locked(State())
    /// An eventfd that ends the thread's sleep (a job came, or the session ended) and an interruptible wait.
    private let wakeUp: Int32

    /// Starts the thread, named `name` as the kernel shows it (`top -H`: at most 15 bytes).
    public init(name: String) {
        wakeUp = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        precondition(wakeUp >= 0, "eventfd failed: \(errno)")
        let thread = Thread { [self] in
            favoriteme_name_current_thread(name)
            run()
        }
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { state in
            state.jobs.append(job)
            if state.sleeping { signal(state) }
            state.sleeping = false
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Ends the thread once the jobs queued so far have run. The owner calls this when it goes away: no job can come
    /// after that.
    public func stop() {
        state.withLock { state in
            state.stopping = true
            signal(state)
        }
    }

    // MARK: Waiting

    /// Blocks the calling thread (this one: call it only from the session's isolated code) until `socket` is ready
    /// for `interest`, or, when `interruptible`, until ``interrupt()``. Level-triggered: input already in the socket
    /// returns at once.
    public func wait(for interest: Interest, on socket: Int32, interruptible: Bool = false) {
        let events = interest == .readable ? POLLIN : POLLIN | POLLOUT
        var descriptors = [
            pollfd(fd: socket, events: Int16(events), revents: 0),
            pollfd(fd: interruptible ? wakeUp : -1, events: Int16(POLLIN), revents: 0),  // -1: not looked at
        ]
        // The flag, not the eventfd, says whether an interrupt came: the thread's idle loop also empties the eventfd.
        while !(interruptible && takeInterrupt()) {
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            if poll(&descriptors, 2, -1) < 0 {
                if errno == EINTR { continue }
                return  // libpq's next read reports what is wrong with the socket
            }
            if descriptors[1].revents != 0 { drain() }
            if descriptors[0].revents != 0 { return }
        }
    }

    /// Ends an interruptible wait now, or the next one at once: for waits with no end in sight (LISTEN) whose task
    /// is cancelled. Any thread.
    public func interrupt() {
        state.withLock { state in
            state.interrupted = true
            signal(state)
        }
    }

    private func takeInterrupt() -> Bool {
        state.withLock { state in
            defer { state.interrupted = false }
            return state.interrupted
        }
    }

    // MARK: The thread

    private func run() {
        var jobs: [UnownedJob] = []
        while true {
            let stop = state.withLock { state -> Bool in
                swap(&jobs, &state.jobs)
                state.sleeping = jobs.isEmpty
                guard jobs.isEmpty, state.stopping else { return false }
                state.ended = true
                close(wakeUp)
                return true
            }
            if stop { return }
            if jobs.isEmpty {
                var descriptor = pollfd(fd: wakeUp, events: Int16(POLLIN), revents: 0)
                while poll(&descriptor, 1, -1) < 0, errno == EINTR {}
                drain()
                continue
            }
            for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
            jobs.removeAll(keepingCapacity: true)
        }
    }

    /// Writes to `wakeUp`, unless the thread has closed it; called under the lock, which orders it with the close.
    private func signal(_ state: State) {
        guard !state.ended else { return }
        var one: UInt64 = 1
        _ = write(wakeUp, &one, MemoryLayout<UInt64>.size)
    }

    private func drain() {
        var count: UInt64 = 0
        _ = read(wakeUp, &count, MemoryLayout<UInt64>.size)
    }
}
