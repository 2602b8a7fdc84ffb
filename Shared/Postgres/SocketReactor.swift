import CLibpq
import Foundation
import Synchronization

/// One thread that waits, in `epoll`, for the sockets of every PostgreSQL session in the process, and wakes the task
/// waiting on each.
///
/// Sessions drive libpq in non-blocking mode from Swift's cooperative pool: sending and reading never block, and
/// waiting for the server is an `await` here. So a statement costs the caller no thread of its own and no hand-off
/// to one; the only cross-thread step is this thread waking a task when its answer arrives, and under load one
/// `epoll_wait` wakes many.
///
/// Sockets are registered edge-triggered, once: readiness that arrives while nobody waits is remembered, so a waiter
/// never misses it. A spurious wake is harmless (libpq then reads nothing and the caller waits again).
final class SocketReactor: Sendable {
    /// The process's reactor. Its thread starts with the first socket and ends a second after the last one is gone,
    /// so an idle process (or one whose main thread has finished) is not kept alive by it.
    static let shared = SocketReactor()

    enum Interest: Sendable {
        /// The server sent something (or closed the connection).
        case readable
        /// Readable, or room to send again (libpq's outgoing buffer did not fit in the socket's).
        case readableOrWritable
    }

    private struct Socket {
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

    private let epoll: Int32
    private let sockets = Mutex<[Int32: Socket]>([:])
    /// Whether the thread runs; changed only together with `sockets`, so a socket is never left without one.
    private let threadRunning = Mutex(false)

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: \(errno)")
    }

    /// Starts watching `socket`. Call once per session, before waiting on it.
    func register(_ socket: Int32) throws {
        threadRunning.withLock { running in
            sockets.withLock { $0[socket] = Socket() }
            guard !running else { return }
            running = true
            let thread = Thread { [self] in run() }
            thread.name = "postgres-reactor"
            thread.start()
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.fd = socket
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) == 0 else {
            let code = errno
            sockets.withLock { _ = $0.removeValue(forKey: socket) }
            throw PostgresError.client("cannot watch the database socket (errno \(code))")
        }
    }

    /// Stops watching `socket` (before it is closed, so a reused descriptor number starts afresh). A task still
    /// waiting on it is woken.
    func deregister(_ socket: Int32) {
        let waiter = sockets.withLock { $0.removeValue(forKey: socket)?.waiter }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
        waiter?.resume()
    }

    /// Returns once `socket` is ready for `interest` (or was since the last wait), or has been deregistered.
    func wait(for interest: Interest, on socket: Int32) async {
        if sockets.withLock({ $0[socket]?.take(interest) ?? true }) { return }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let ready = sockets.withLock { sockets -> Bool in
                guard var entry = sockets[socket] else { return true }
                if entry.take(interest) {
                    sockets[socket] = entry
                    return true
                }
                entry.waiter = continuation
                entry.interest = interest
                sockets[socket] = entry
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Whether `socket` became readable after its last wait: something may have arrived unread (for a session at
    /// rest, a sign that the server ended it). `false` means nothing arrived, without a system call.
    func mayHaveInput(on socket: Int32) -> Bool {
        sockets.withLock { $0[socket]?.readable ?? true }
    }

    /// ``wait(for:on:)`` that also returns when the task is cancelled: for waits with no end in sight (LISTEN).
    func waitCancellably(for interest: Interest, on socket: Int32) async {
        await withTaskCancellationHandler {
            await wait(for: interest, on: socket)
        } onCancel: {
            wake(socket)
        }
    }

    /// Wakes the task waiting on `socket`, or makes its next wait return at once.
    private func wake(_ socket: Int32) {
        let waiter = sockets.withLock { sockets -> UnsafeContinuation<Void, Never>? in
            guard var entry = sockets[socket] else { return nil }
            let waiter = entry.waiter
            entry.waiter = nil
            if waiter == nil { entry.readable = true }
            sockets[socket] = entry
            return waiter
        }
        waiter?.resume()
    }

    private func run() {
        let capacity: Int32 = 128
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        var ready: [UnsafeContinuation<Void, Never>] = []
        ready.reserveCapacity(Int(capacity))
        defer { events.deallocate() }
        while true {
            let count = epoll_wait(epoll, events, capacity, 1000)
            if count == 0, threadRunning.withLock({ running in
                guard sockets.withLock({ $0.isEmpty }) else { return false }
                running = false
                return true
            }) { return }
            guard count > 0 else { continue }  // idle with sockets, or EINTR
            sockets.withLock { sockets in
                for index in 0..<Int(count) {
                    let event = events[index]
                    let socket = event.data.fd
                    guard var entry = sockets[socket] else { continue }  // deregistered meanwhile
                    let closedOrFailed = event.events & (EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0
                    if event.events & EPOLLIN.rawValue != 0 || closedOrFailed { entry.readable = true }
                    if event.events & EPOLLOUT.rawValue != 0 || closedOrFailed { entry.writable = true }
                    if let waiter = entry.waiter, entry.take(entry.interest) {
                        entry.waiter = nil
                        ready.append(waiter)
                    }
                    sockets[socket] = entry
                }
            }
            for waiter in ready { waiter.resume() }
            ready.removeAll(keepingCapacity: true)
        }
    }
}
