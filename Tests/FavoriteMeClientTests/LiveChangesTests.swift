import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// The live changes stream recovers by itself and belongs to one user: a capped backoff, woken by the network's
/// return, and ended when another user signs in (whose own stream then starts).
@Suite struct LiveChangesTests {
    static let ready = "event: ready\ndata: {}"

    /// A server whose stream cannot be reached while `down`; signs in `other`; answers the favorites routes.
    final class StreamServer: @unchecked Sendable {
        // @unchecked: `isDown` is only touched under `lock`.
        private let lock = NSLock()
        private var isDown = false
        let account = FakeAccount()
        let other = Fixture.user("other")
        var extraEvents: [String] = []
        // Weak: a request the client still makes after the test has let its server go is refused, not a crash.
        lazy var stub = StubServer { [weak self] request in self?.answer(request) ?? .fail(.cannotConnectToHost) }

        var down: Bool {
            get { lock.withLock { isDown } }
            set { lock.withLock { isDown = newValue } }
        }

        private func answer(_ request: StubRequest) -> StubAnswer {
            if request.path == "/v1/auth/login" { return .json(Fixture.authSession(other, refreshToken: "other-1")) }
            if request.path == "/v1/favorites/stream" {
                return down ? .fail(.cannotConnectToHost) : .events([LiveChangesTests.ready] + extraEvents, open: true)
            }
            return account.answer(request) ?? .problem(404, .notFound)
        }
    }

    /// Fifteen failed reconnects: each wait is capped (uncapped, the fifteenth would be 30 s × 2¹⁴), and the
    /// network's return reconnects at once rather than after the wait under way.
    @Test(.timeLimit(.minutes(1))) func fifteenFailuresThenTheNetworkReturns() async throws {
        let server = StreamServer()
        server.down = true
        let policy = RetryPolicy(firstDelay: 30, longestDelay: 60)
        let app = server.stub.client(tokens: MemoryTokenStore(Fixture.session(Fixture.user())), policy: policy)
        var live = app.liveChanges().makeAsyncIterator()
        var waits: [Duration] = []
        while waits.count < 15 {
            guard case .disconnected(let error, let retryIn)? = await live.next() else {
                Issue.record("the stream connected while the server was down")
                return
            }
            #expect(error.isConnectivity)
            waits.append(retryIn)
            if waits.count < 15 { await app.networkDidReturn() }  // still down: one more failure, no wait
        }
        #expect(waits.allSatisfy { $0 >= .seconds(15) && $0 <= .seconds(60) }, "\(waits)")
        #expect(waits.suffix(8).allSatisfy { $0 >= .seconds(30) })  // the cap reached, not passed
        server.down = false
        await app.networkDidReturn()
        #expect(await live.next() == .connected)  // within the time limit, not after a 30 to 60 s wait
    }

    /// The stream is A's: when B signs in on the device, A's ends (it never runs on with A's session), and B's own
    /// stream, started next, connects with B's session.
    @Test(.timeLimit(.minutes(1))) func anotherUsersSignInEndsTheStream() async throws {
        let server = StreamServer()
        let app = server.stub.client(tokens: MemoryTokenStore(Fixture.session(Fixture.user("first"))))
        var live = app.liveChanges().makeAsyncIterator()
        #expect(await live.next() == .connected)
        #expect(server.stub.requests("GET", "/v1/favorites/stream").last?.header("Authorization") == "Bearer access-refresh-1")
        try await app.signIn(email: server.other.email, password: "a password")
        while let event = await live.next() {
            guard case .disconnected = event else {
                Issue.record("the first user's stream went on after another signed in: \(event)")
                return
            }
        }
        var next = app.liveChanges().makeAsyncIterator()
        #expect(await next.next() == .connected)
        #expect(server.stub.requests("GET", "/v1/favorites/stream").last?.header("Authorization") == "Bearer access-other-1")
    }

    /// Signing out ends it too.
    @Test(.timeLimit(.minutes(1))) func signingOutEndsTheStream() async throws {
        let server = StreamServer()
        let app = server.stub.client(tokens: MemoryTokenStore(Fixture.session(Fixture.user())))
        let live = app.liveChanges()
        var events = live.makeAsyncIterator()
        #expect(await events.next() == .connected)
        server.stub.answer { request in request.path == "/v1/auth/logout" ? .noContent : .problem(404, .notFound) }
        try await app.signOut()
        while let event = await events.next() {
            guard case .disconnected = event else {
                Issue.record("the stream went on after sign-out: \(event)")
                return
            }
        }
    }

    /// An event of a type this version does not know (a newer server's) is skipped; the stream goes on.
    @Test(.timeLimit(.minutes(1))) func unknownEventTypesAreSkipped() async throws {
        let server = StreamServer()
        server.account.add("SK-C-5")
        server.extraEvents = [
            "event: profile-changed\ndata: {\"displayName\":\"Ada\",\"somethingNew\":[1,2]}",
            "id: 1\nevent: change\ndata: {\"version\":1}",
        ]
        let log = RequestLog()
        let app = server.stub.client(tokens: MemoryTokenStore(Fixture.session(Fixture.user())), log: log.record)
        var live = app.liveChanges().makeAsyncIterator()
        #expect(await live.next() == .connected)
        guard case .changed(let change)? = await live.next() else {
            Issue.record("the change after the unknown event was not told")
            return
        }
        #expect(change.itemId == "SK-C-5")
        #expect(await app.hearts(in: .rijksmuseum) == ["SK-C-5"])
        // Through the client's own session, and in its log.
        #expect(log.records.contains { $0.path == "/v1/favorites/stream" && $0.status == 200 })
    }
}

/// Collects a client's request records.
final class RequestLog: @unchecked Sendable {
    // @unchecked: `seen` is only touched under `lock`.
    private let lock = NSLock()
    private var seen: [RequestRecord] = []
    var records: [RequestRecord] { lock.withLock { seen } }
    var record: @Sendable (RequestRecord) -> Void { { [self] record in lock.withLock { seen.append(record) } } }
}
