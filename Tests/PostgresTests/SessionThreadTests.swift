import Foundation
import PostgresWaiting
import Testing

@Suite struct SessionThreadTests {
    /// An actor whose executor is a session thread, as a session's is.
    actor OnItsThread {
        let thread = SessionThread(name: "thread-test")
        nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
        var calls: [Int] = []

        func record(_ call: Int) -> String {
            calls.append(call)
            return currentThreadName()
        }

        func wait(on socket: Int32, interruptible: Bool) {
            thread.wait(for: .readable, on: socket, interruptible: interruptible)
        }

        deinit { thread.stop() }
    }

    /// Calls run one after another, in the order each caller made them, all on the one named thread.
    @Test func callsRunInOrderOnTheThread() async throws {
        let actor = OnItsThread()
        var names: Set<String> = []
        for call in 1...50 { names.insert(await actor.record(call)) }
        #expect(names == ["thread-test"])
        #expect(await actor.calls == Array(1...50))
        #expect(currentThreadName() != "thread-test")
    }

    /// A wait returns when the socket has input, and an interrupt ends only an interruptible wait (LISTEN's): one
    /// that came before the wait ends it at once.
    @Test(.timeLimit(.minutes(1)))
    func aWaitEndsOnInputOrWhenInterrupted() async throws {
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { for descriptor in pair { close(descriptor) } }
        let (socket, peer) = (pair[0], pair[1])
        let actor = OnItsThread()

        actor.thread.interrupt()
        await actor.wait(on: socket, interruptible: true)  // nothing to read: only the interrupt ends it

        let waiting = Task { await actor.wait(on: socket, interruptible: false) }
        var byte: UInt8 = 1
        #expect(write(peer, &byte, 1) == 1)
        await waiting.value
        #expect(read(socket, &byte, 1) == 1)
    }
}

/// The kernel's name of the calling thread (session threads are named).
func currentThreadName() -> String {
    let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
    return name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
}
