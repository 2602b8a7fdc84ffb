import Foundation

/// A plain TCP connection to 127.0.0.1, for what an HTTP client hides: a request sent by halves and left hanging, a
/// connection closed in the middle of a response, and telling whether the server closed its end.
public final class RawConnection: Sendable {
    private let descriptor: Int32

    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestSupportError("socket() failed: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Foundation.close(descriptor)
            throw TestSupportError("connect() to 127.0.0.1:\(port) failed: \(errno)")
        }
    }

    deinit { Foundation.close(descriptor) }

    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { Foundation.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard written > 0 else { throw TestSupportError("send() failed: \(errno)") }
            sent += written
        }
    }

    /// What arrives until `marker` (or `otherMarker`) is in it, the server closes its end, or `seconds` pass (a bound for a test that
    /// fails, never a measurement); `closed` tells whether the server closed it. The waiting happens on a dispatch
    /// thread, never the cooperative pool the server under test needs.
    public func read(until marker: String? = nil, orUntil otherMarker: String? = nil, seconds: Double = 30) async
        -> (text: String, closed: Bool) {
        let markers = [marker, otherMarker].compactMap { $0 }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: self.blockingRead(until: markers, seconds: seconds))
            }
        }
    }

    private func blockingRead(until markers: [String], seconds: Double) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            let text = String(decoding: received, as: UTF8.self)
            if markers.contains(where: text.contains) { break }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // A signal (a test's child exiting) interrupts poll and recv: that is no answer and no close.
            let polled = poll(&ready, 1, 100)
            if polled < 0, errno == EINTR { continue }
            guard polled >= 0 else { break }
            guard ready.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer.prefix(count)
        }
        return (String(decoding: received, as: UTF8.self), false)
    }

    /// Closes both directions, as a phone going away does.
    public func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
    }
}
