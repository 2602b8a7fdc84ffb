import Foundation
import Locking

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it; the socket is closed again).
public func freeLoopbackPort() throws -> Int {
    let descriptor = try loopbackSocket(port: 0)
    defer { close(descriptor) }
    return try boundPort(of: descriptor)
}

/// A TCP relay on 127.0.0.1 in front of a server, for tests of what a client does when the network fails it.
///
/// What it does with new connections is its ``Mode``: forward them; swallow them (accepted and read, never forwarded
/// nor answered, as a server behind a dead link looks to a client); refuse them (nothing listens, so connecting fails at
/// once, as when the server is down); forward the requests but lose the answers (the server acts, the client never hears); forward them and
/// hold each answer a while (a slow network); or answer them itself with a fixed response, never forwarding (a
/// captive portal, a proxy's error page). Connections made before a change to forwarding or swallowing keep the mode
/// they had. ``stop()`` closes everything, so a client stuck on a connection sees it end.
public final class TCPRelay: Sendable {
    /// The relay's port on 127.0.0.1.
    public let port: Int
    private let state = Locked(State())

    public enum Mode: Sendable, Equatable {
        case forward, swallow, refuse, loseAnswers
        case holdAnswers(seconds: Double)
        /// Answers every request with these bytes (a whole HTTP response), then closes.
        case answer(String)
    }

    private struct State {
        var mode = Mode.forward
        var stopped = false
        /// The listening socket; -1 while refusing (nothing listens, as when the server is down).
        var listener: Int32 = -1
        /// Every connection's descriptors, each closed by the last thread that uses it.
        var open: Set<Int32> = []
        /// Answers the server sent that `holdAnswers` is holding, or held; and those it has let go.
        var answersHeld = 0
        var answersReleased = 0
    }

    /// Relays to `host` (an IPv4 address) and `port`.
    public init(to host: String, port upstreamPort: Int) throws {
        let listener = try Self.listeningSocket(port: 0)
        port = try boundPort(of: listener)
        state.withLock { $0.listener = listener }
        let upstream = try Self.address(host, upstreamPort)
        Thread { [self] in acceptConnections(upstream: upstream) }.start()
    }

    /// What happens to new connections from now on. Any mode but forwarding and swallowing also ends the connections
    /// already open (a client's kept-alive connection would otherwise carry on as before), as a server going away does.
    public func set(_ mode: Mode) {
        state.withLock { state in
            state.mode = mode
            // Refusing closes the listening socket, so connecting fails at once (ECONNREFUSED); any other mode listens
            // again on the same port. The accept thread closes a socket it was woken from.
            if mode == .refuse, state.listener >= 0 {
                shutdown(state.listener, Int32(SHUT_RDWR))
                state.listener = -1
            } else if mode != .refuse, state.listener < 0, !state.stopped {
                state.listener = (try? Self.listeningSocket(port: port)) ?? -1
            }
            guard mode != .forward && mode != .swallow else { return }
            // shutdown, not close: the threads blocked on them wake and close them (as in stop()).
            for descriptor in state.open { shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    /// How many answers `holdAnswers` has held so far (each counted as it starts waiting): a test waits for this, not
    /// for a guessed time, before it acts while an answer is held.
    public var answersHeld: Int { state.withLock { $0.answersHeld } }

    /// How many held answers have been let go to the client.
    public var answersReleased: Int { state.withLock { $0.answersReleased } }

    /// New connections are accepted and then ignored; those already made go on.
    public func swallowNewConnections() { set(.swallow) }

    /// New connections are forwarded again.
    public func forwardNewConnections() { set(.forward) }

    /// Ends every connection and stops accepting. Idempotent.
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            // shutdown, not close: it wakes the threads blocked on these descriptors, which then close them. Under the
            // lock, so that none is closed (and its number reused) in between.
            for descriptor in state.open { shutdown(descriptor, Int32(SHUT_RDWR)) }
            if state.listener >= 0 { shutdown(state.listener, Int32(SHUT_RDWR)) }
            state.listener = -1
        }
    }

    private static func listeningSocket(port: Int) throws -> Int32 {
        let listener = try loopbackSocket(port: port)
        guard listen(listener, 16) == 0 else {
            close(listener)
            throw TestSupportError("listen() failed: \(errno)")
        }
        return listener
    }

    private func acceptConnections(upstream: sockaddr_in) {
        while true {
            let (listener, stopped) = state.withLock { ($0.listener, $0.stopped) }
            if stopped { return }
            guard listener >= 0 else {
                usleep(10_000)  // refusing: nothing listens until the mode changes
                continue
            }
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }  // a signal, or a client that gave up first
                close(listener)  // shut down by set(.refuse) or stop(): this thread was the one using it
                continue
            }
            let (admitted, mode) = state.withLock { state in
                if !state.stopped { state.open.insert(client) }
                return (!state.stopped, state.mode)
            }
            guard admitted else {
                close(client)
                return
            }
            if mode == .swallow {
                Thread { [self] in
                    drain(client)
                    release([client])
                }.start()
                continue
            }
            if case .answer(let response) = mode {
                Thread { [self] in
                    var buffer = [UInt8](repeating: 0, count: 16_384)
                    _ = read(client, &buffer, buffer.count)
                    let bytes = Array(response.utf8)
                    _ = bytes.withUnsafeBytes { send(client, $0.baseAddress!, bytes.count, Int32(MSG_NOSIGNAL)) }
                    shutdown(client, Int32(SHUT_WR))
                    drain(client)
                    release([client])
                }.start()
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = upstream
            let connected = server >= 0 && withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            let tracked = connected && state.withLock { state in
                guard !state.stopped else { return false }
                state.open.insert(server)
                return true
            }
            guard tracked else {
                if server >= 0 { close(server) }
                release([client])
                continue
            }
            // Two pumps, one per direction; the second to finish closes both descriptors.
            let pumpsLeft = Locked(2)
            for (source, target) in [(client, server), (server, client)] {
                let losing = mode == .loseAnswers && source == server
                let hold: Double = if case .holdAnswers(let seconds) = mode, source == server { seconds } else { 0 }
                Thread { [self] in
                    if losing {
                        loseAnswer(from: server, to: client)
                    } else {
                        pump(from: source, to: target, holdingFirstBytes: hold)
                    }
                    if pumpsLeft.withLock({ count in
                        count -= 1
                        return count == 0
                    }) { release([client, server]) }
                }.start()
            }
        }
    }

    private func pump(from source: Int32, to target: Int32, holdingFirstBytes hold: Double = 0) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var held = hold <= 0
        copying: while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { break }
            if !held {
                state.withLock { $0.answersHeld += 1 }
                Thread.sleep(forTimeInterval: hold)
                state.withLock { $0.answersReleased += 1 }
                held = true
            }
            var sent = 0
            while sent < count {
                // MSG_NOSIGNAL: a peer that is gone must end the pump, not the test process (SIGPIPE).
                let written = buffer.withUnsafeBytes { send(target, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { break copying }
                sent += written
            }
        }
        shutdown(target, Int32(SHUT_WR))
    }

    /// Waits for the server's answer, then drops the client's connection without a byte of it: the request was
    /// served, the client only sees the connection end.
    private func loseAnswer(from server: Int32, to client: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        _ = read(server, &buffer, buffer.count)
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(server, Int32(SHUT_RDWR))
    }

    private func drain(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while read(descriptor, &buffer, buffer.count) > 0 {}
    }

    private func release(_ descriptors: [Int32]) {
        state.withLock { state in
            for descriptor in descriptors { state.open.remove(descriptor) }
        }
        for descriptor in descriptors { close(descriptor) }
    }

    private static func address(_ host: String, _ port: Int) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw TestSupportError("not an IPv4 address: \(host)")
        }
        return address
    }
}

/// A TCP socket bound to 127.0.0.1:`port` (0: the kernel picks one).
private func loopbackSocket(port: Int) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestSupportError("socket() failed: \(errno)") }
    // A relay listens again on its port after refusing, while that port's last connections may be in TIME_WAIT.
    var reuse: Int32 = 1
    setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else {
        close(descriptor)
        throw TestSupportError("bind() failed: \(errno)")
    }
    return descriptor
}

/// The port a bound socket got.
private func boundPort(of descriptor: Int32) throws -> Int {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    guard named == 0 else { throw TestSupportError("getsockname() failed: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
