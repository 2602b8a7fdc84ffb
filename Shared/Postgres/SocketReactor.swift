import CLibpq
import Foundation
import Locking

/// One thread that waits, in `epoll`, for the sockets of its PostgreSQL sessions, and wakes the task waiting on each;
/// it is also a task executor, on which a lease's statements run without leaving the thread. A process has one
/// reactor per core at most, and uses the next only once those before it carry several sessions each (see
/// ``placeNewSession(_:)``).
///
/// Sessions drive libpq in non-blocking mode: sending and reading never block, and waiting for the server is an
/// `await` here. A task on Swift's cooperative pool that runs a statement is woken by this thread when the answer
/// arrives: one hand-off between threads per round trip. A task that prefers this executor (the pool sets the
/// preference for the body of a lease, see ``DatabasePool/withConnection(timeout:_:)``) runs here instead: the
/// answer's wake-up is a job queued on this same thread, run as soon as `epoll_wait` returns, so a session's
/// statements cost no hand-off at all after the first.
///
/// Sockets are registered edge-triggered, once: readiness that arrives while nobody waits is remembered, so a waiter
/// never misses it. A spurious wake is harmless (libpq then reads nothing and the caller waits again). Jobs queued
/// from other threads wake `epoll_wait` through an `eventfd`, written only while the thread sleeps.
final class SocketReactor: TaskExecutor, Sendable {
    /// The process's reactors, one per core. Each one's thread starts with its first socket or job and ends a second
    /// after its last socket is gone and no job is queued, so an idle process (or one whose main thread has finished)
    /// is not kept alive by them; a reactor no session uses costs two descriptors and no thread.
    private static let all = (0..<coreCount).map { _ in SocketReactor() }

    /// The cores this process may use. Foundation's count follows the CPU affinity and a cgroup v1 quota, not a
    /// cgroup v2 one (`cpu.max`, which current container runtimes set): a pod limited to two CPUs on a large node
    /// would otherwise start a reactor for every core of the node.
    static let coreCount: Int = {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let cpuMax = try? String(contentsOfFile: "/sys/fs/cgroup/cpu.max", encoding: .utf8)
        return max(1, min(cores, cpuMax.flatMap(cores(allowedBy:)) ?? cores))
    }()

    /// Whole cores a cgroup v2 `cpu.max` ("quota period" in microseconds, or "max period") allows, rounded up;
    /// `nil` when it sets no quota or cannot be read.
    static func cores(allowedBy cpuMax: String) -> Int? {
        let fields = cpuMax.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]), quota > 0, period > 0
        else { return nil }
        return (quota + period - 1) / period
    }

    /// Sessions a reactor takes before the next reactor is used.
    ///
    /// A reactor's thread gets about the CPU share of one busy backend, so with many sessions a single one holds them
    /// all back; but a reactor with only a session or two sleeps between their answers, and waking it costs about as
    /// much as a second thread gains. Measured with held sessions on two cores (docs/benchmarks.md): a second reactor
    /// gains 6–11 % for reads and 2–6 % for inserts from 8 sessions up, while 4 sessions split two and two cost 30 %
    /// more client CPU per statement and were no faster on balance (3–5 % slower interleaved with one reactor, 6 %
    /// faster in a separate run).
    static let sessionsBeforeNextReactor = 4

    /// Serialises choosing a reactor with registering on it: sessions that open at the same moment would otherwise
    /// all count the same loads and land on one reactor.
    private static let placement = Locked(())

    /// Registers a new session's `socket` with the first reactor that carries fewer than
    /// ``sessionsBeforeNextReactor`` sessions, else with the one that carries fewest; returns the reactor and the
    /// registration's token.
    static func placeNewSession(_ socket: Int32) throws -> (SocketReactor, UInt64) {
        try placement.withLock { _ in
            let reactor = all[choose(amongLoads: all.map { reactor in reactor.state.withLock(\.sockets.count) })]
            return (reactor, try reactor.register(socket))
        }
    }

    /// The index ``placeNewSession(_:)`` picks, given how many sessions each reactor carries (never empty).
    static func choose(amongLoads loads: [Int]) -> Int {
        loads.firstIndex { $0 < sessionsBeforeNextReactor } ?? loads.indices.min { loads[$0] < loads[$1] }!
    }

    enum Interest: Sendable {
        /// The server sent something (or closed the connection).
        case readable
        /// Readable, or room to send again (libpq's outgoing buffer did not fit in the socket's).
        case readableOrWritable
    }

    private struct Socket {
        /// Which registration of this descriptor number this is (see ``register(_:)``).
        var token: UInt64
        var waiter: UnsafeContinuation<Void, Never>?
        var interest = Interest.readable
        var readable = false
        var writable = false

        /// Consumes the readiness that `interest` asks for, if any has arrived.
        mutating func take(_ interest: Interest) -> Bool {
            if readable {
                readable = false
                return true
            }
            if interest == .readableOrWritable, writable {
                writable = false
                return true
            }
            return false
        }
    }

    private struct State: @unchecked Sendable {  // UnownedJob is not Sendable; jobs only cross here, under the lock
        var sockets: [Int32: Socket] = [:]
        /// Jobs of tasks that prefer this executor, in the order they came.
        var jobs: [UnownedJob] = []
        /// The thread is in `epoll_wait` with no timeout to speak of: a new job must write to `wakeUp`.
        var sleeping = false
        var threadRunning = false
        var nextToken: UInt64 = 0

        /// Marks the thread as running, and tells whether it must be started.
        mutating func needsThread() -> Bool {
            defer { threadRunning = true }
            return !threadRunning
        }
    }

    private let epoll: Int32
    /// An eventfd in the epoll set: a job queued from another thread writes to it to end a sleeping `epoll_wait`.
    private let wakeUp: Int32
    private let state = Locked(State())

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: \(errno)")
        wakeUp = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        precondition(wakeUp >= 0, "eventfd failed: \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeUp
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, wakeUp, &event) == 0, "epoll_ctl failed: \(errno)")
    }

    // MARK: Executor

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (start, wake) = state.withLock { state in
            state.jobs.append(job)
            defer { state.sleeping = false }
            return (state.needsThread(), state.sleeping)
        }
        if start { startThread() }
        if wake {
            var one: UInt64 = 1
            _ = write(wakeUp, &one, MemoryLayout<UInt64>.size)
        }
    }

    // MARK: Sockets

    /// Starts watching `socket`. Call once per session, before waiting on it. Returns the registration's token, which
    /// ``deregister(_:token:)`` needs.
    func register(_ socket: Int32) throws -> UInt64 {
        let (start, token) = state.withLock { state in
            state.nextToken += 1
            state.sockets[socket] = Socket(token: state.nextToken)
            return (state.needsThread(), state.nextToken)
        }
        if start { startThread() }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.fd = socket
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) == 0 else {
            let code = errno
            state.withLock { _ = $0.sockets.removeValue(forKey: socket) }
            throw PostgresError.client("cannot watch the database socket (errno \(code))")
        }
        return token
    }

    /// Stops watching `socket` (before it is closed, so a reused descriptor number starts afresh). A task still
    /// waiting on it is woken. Only the registration `token` names is removed: when the server ended a session,
    /// libpq has already closed its descriptor, and the number may belong to a newer session by now, whose
    /// registration must stay.
    func deregister(_ socket: Int32, token: UInt64) {
        let (owned, waiter) = state.withLock { state -> (Bool, UnsafeContinuation<Void, Never>?) in
            guard state.sockets[socket]?.token == token else { return (false, nil) }
            return (true, state.sockets.removeValue(forKey: socket)?.waiter)
        }
        guard owned else { return }  // a closed descriptor left the epoll set by itself
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
        waiter?.resume()
    }

    /// Returns once `socket` is ready for `interest` (or was since the last wait), or has been deregistered.
    /// `nonisolated(nonsending)`: the caller (a session's actor) waits where it runs, with no hop on the way in.
    nonisolated(nonsending) func wait(for interest: Interest, on socket: Int32) async {
        if state.withLock({ $0.sockets[socket]?.take(interest) ?? true }) { return }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                guard var entry = state.sockets[socket] else { return true }
                if entry.take(interest) {
                    state.sockets[socket] = entry
                    return true
                }
                entry.waiter = continuation
                entry.interest = interest
                state.sockets[socket] = entry
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Whether `socket` became readable after its last wait: something may have arrived unread (for a session at
    /// rest, a sign that the server ended it). `false` means nothing arrived, without a system call.
    func mayHaveInput(on socket: Int32) -> Bool {
        state.withLock { $0.sockets[socket]?.readable ?? true }
    }

    /// ``wait(for:on:)`` that also returns when the task is cancelled: for waits with no end in sight (LISTEN).
    nonisolated(nonsending) func waitCancellably(for interest: Interest, on socket: Int32) async {
        await withTaskCancellationHandler {
            await wait(for: interest, on: socket)
        } onCancel: {
            wake(socket)
        }
    }

    /// Wakes the task waiting on `socket`, or makes its next wait return at once.
    private func wake(_ socket: Int32) {
        let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            guard var entry = state.sockets[socket] else { return nil }
            let waiter = entry.waiter
            entry.waiter = nil
            if waiter == nil { entry.readable = true }
            state.sockets[socket] = entry
            return waiter
        }
        waiter?.resume()
    }

    // MARK: The thread

    /// The thread's name, as `top -H` and tests see it.
    static let threadName = "pg-reactor"

    private func startThread() {
        Thread { [self] in
            favoriteme_name_current_thread(Self.threadName)
            run()
        }.start()
    }

    /// Turns of jobs run back to back (the jobs that one turn queued run in the next) before the sockets are
    /// looked at again, so that tasks busy on this thread cannot keep the answers of others waiting.
    private static let turnsBetweenPolls = 16

    private func run() {
        let capacity: Int32 = 128
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        var jobs: [UnownedJob] = []
        var ready: [UnsafeContinuation<Void, Never>] = []
        ready.reserveCapacity(Int(capacity))
        defer { events.deallocate() }
        var turns = 0
        while true {
            let idle = state.withLock { state in
                swap(&jobs, &state.jobs)
                state.sleeping = jobs.isEmpty
                return jobs.isEmpty
            }
            if !idle {
                for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
                jobs.removeAll(keepingCapacity: true)
                turns += 1
                if turns < Self.turnsBetweenPolls { continue }
            }
            turns = 0
            // Nothing to run: sleep until a socket is ready or a job is queued (through `wakeUp`). Otherwise only
            // look, and go on with the jobs.
            let count = epoll_wait(epoll, events, capacity, idle ? 1000 : 0)
            let stop = state.withLock { state -> Bool in
                state.sleeping = false
                if count == 0, idle, state.sockets.isEmpty, state.jobs.isEmpty {
                    state.threadRunning = false
                    return true
                }
                for index in 0..<Int(max(count, 0)) {
                    let event = events[index]
                    let socket = event.data.fd
                    if socket == wakeUp {
                        var value: UInt64 = 0
                        _ = read(wakeUp, &value, MemoryLayout<UInt64>.size)
                        continue
                    }
                    guard var entry = state.sockets[socket] else { continue }  // deregistered meanwhile
                    let closedOrFailed = event.events & (EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0
                    if event.events & EPOLLIN.rawValue != 0 || closedOrFailed { entry.readable = true }
                    if event.events & EPOLLOUT.rawValue != 0 || closedOrFailed { entry.writable = true }
                    if let waiter = entry.waiter, entry.take(entry.interest) {
                        entry.waiter = nil
                        ready.append(waiter)
                    }
                    state.sockets[socket] = entry
                }
                return false
            }
            if stop { return }
            // A waiter that prefers this executor is queued here (no wake-up needed: the thread is awake) and runs on
            // the next turn; any other goes to its own executor.
            for waiter in ready { waiter.resume() }
            ready.removeAll(keepingCapacity: true)
        }
    }
}
