import Foundation
@testable import Postgres
import Testing

@Suite struct ReactorTests {
    /// libpq closes the descriptor of a session the server ended, and the number may go to a newer session before the
    /// pool closes the old one. Closing the old one must not stop the reactor watching the new one's socket.
    @Test func deregisteringAStaleRegistrationLeavesTheNewOneWatched() throws {
        var old: [Int32] = [0, 0]
        var new: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &old) == 0)
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &new) == 0)
        defer { for descriptor in [old[0], old[1], new[0], new[1]] { close(descriptor) } }
        let number = old[0]
        let (reactor, stale) = try SocketReactor.placeNewSession(number)
        // The old socket closes and the same number now names the new one (dup2 does both at once, so no other test
        // can take the number in between).
        try #require(dup2(new[0], number) == number)
        let current = try reactor.register(number)
        reactor.deregister(number, token: stale)
        #expect(!reactor.mayHaveInput(on: number))  // still watched, and nothing has arrived
        reactor.deregister(number, token: current)
        #expect(reactor.mayHaveInput(on: number))  // no longer watched: an unknown socket may have anything
    }

    /// A new session goes to the first reactor carrying fewer than four sessions; once all carry four, to the one
    /// carrying fewest (the first of equals).
    @Test func sessionsFillOneReactorBeforeTheNext() {
        #expect(SocketReactor.sessionsBeforeNextReactor == 4)
        #expect(SocketReactor.choose(amongLoads: [0]) == 0)
        #expect(SocketReactor.choose(amongLoads: [9]) == 0)
        #expect(SocketReactor.choose(amongLoads: [0, 0]) == 0)
        #expect(SocketReactor.choose(amongLoads: [3, 0]) == 0)
        #expect(SocketReactor.choose(amongLoads: [4, 0]) == 1)
        #expect(SocketReactor.choose(amongLoads: [4, 3]) == 1)
        #expect(SocketReactor.choose(amongLoads: [4, 4]) == 0)
        #expect(SocketReactor.choose(amongLoads: [7, 5]) == 1)
        #expect(SocketReactor.choose(amongLoads: [2, 6]) == 0)  // the first fell below four again
        #expect(SocketReactor.choose(amongLoads: [5, 4, 8]) == 1)
    }

    /// A cgroup v2 quota of 1.5 CPUs allows two reactors; "max" (no quota) and a garbled file leave the count alone.
    @Test func aCgroupQuotaBoundsTheCores() {
        #expect(SocketReactor.cores(allowedBy: "200000 100000\n") == 2)
        #expect(SocketReactor.cores(allowedBy: "150000 100000\n") == 2)
        #expect(SocketReactor.cores(allowedBy: "50000 100000") == 1)
        #expect(SocketReactor.cores(allowedBy: "max 100000\n") == nil)
        #expect(SocketReactor.cores(allowedBy: "") == nil)
        #expect(SocketReactor.cores(allowedBy: "0 100000") == nil)
    }
}
