import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// A heart is taken back only when the server refuses it: whatever else goes wrong, the write waits in its place and
/// goes out later, after a capped backoff, at once when the network returns or the app comes back, and at launch.
@Suite struct QueueRetryTests {
    static let user = Fixture.user()

    /// What goes wrong on a phone's network, in turn: nothing reachable, a timeout, a dropped connection, a 5xx, a
    /// captive portal's page, a proxy's answer that is no problem document.
    static let outage: [StubAnswer] = [
        .fail(.notConnectedToInternet), .fail(.timedOut), .fail(.networkConnectionLost),
        .problem(503, .serviceUnreachable, "down for a moment"), .portal,
        .answer(status: 502, body: Data("Bad Gateway".utf8), headers: [:]),
    ]

    /// A server that fails every request (in turn, as ``outage`` lists) while `down` says so, else answers as
    /// `account` does; counts the failures it served.
    final class FlakyServer: @unchecked Sendable {
        // @unchecked: `isDown` and `failures` are only touched under `lock`.
        private let lock = NSLock()
        private var isDown = true
        private var failuresServed = 0
        let account = FakeAccount()
        // Weak: a request the client still makes after the test has let its server go is refused, not a crash.
        lazy var stub = StubServer { [weak self] request in self?.answer(request) ?? .fail(.cannotConnectToHost) }

        var down: Bool {
            get { lock.withLock { isDown } }
            set { lock.withLock { isDown = newValue } }
        }
        var failures: Int { lock.withLock { failuresServed } }

        private func answer(_ request: StubRequest) -> StubAnswer {
            let failure: StubAnswer? = lock.withLock {
                guard isDown else { return nil }
                failuresServed += 1
                return QueueRetryTests.outage[failuresServed % QueueRetryTests.outage.count]
            }
            return failure ?? account.answer(request) ?? .problem(404, .notFound)
        }
    }

    static func waitUntil(_ condition: @Sendable () async -> Bool) async throws {
        for _ in 0..<500 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the condition was not met within 5 s")
    }

    /// Many more failures than the six after which a write used to be parked and its heart rolled back: nothing is
    /// rolled back, nothing is refused, and once the network is back every write lands once, in the order made.
    @Test func anOutageTakesNoHeartBackAndEveryWriteLandsInOrder() async throws {
        let server = FlakyServer()
        let store = MemoryLocalStore()
        let app = server.stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        let events = await app.localEvents()
        let refusals = Task {
            var refused = 0
            for await event in events { if case .refused = event { refused += 1 } }
            return refused
        }
        _ = try await app.restoreSession()
        for write in ["favorite 1", "favorite 2", "unfavorite 1", "favorite 3", "favorite 1"] {
            let parts = write.split(separator: " ").map(String.init)
            let result: WriteResult<Void> = parts[0] == "favorite"
                ? try await app.favorite(parts[1], in: .rijksmuseum).map { _ in () }
                : try await app.unfavorite(parts[1], in: .rijksmuseum)
            guard case .queued = result else {
                Issue.record("\(write) went through during the outage")
                return
            }
        }
        // The queue keeps trying on its own (backoff of 10 to 50 ms here); every look at the hearts meanwhile shows
        // every write.
        while server.failures < 30 {
            #expect(await app.hearts(in: .rijksmuseum) == ["1", "2", "3"])
            #expect(await app.pendingWrites().count == 5)
            try await Task.sleep(for: .milliseconds(5))
        }
        server.down = false
        await app.networkDidReturn()
        try await Self.waitUntil { await app.pendingWrites().isEmpty }
        #expect(server.account.applied == ["favorite 1", "favorite 2", "unfavorite 1", "favorite 3", "favorite 1"])
        #expect(await app.hearts(in: .rijksmuseum) == ["1", "2", "3"])
        refusals.cancel()
        #expect(await refusals.value == 0)
    }

    /// A 4xx is the server's answer: that write leaves the queue and its heart rolls back, with the server's reason;
    /// the writes after it go on.
    @Test func aRefusalRollsBackThatHeartAndSaysWhy() async throws {
        let account = FakeAccount()
        let stub = StubServer { request in
            if request.path.hasSuffix("/SK-GONE") {
                return .problem(404, .notFound, "SK-GONE is not in the Rijksmuseum's collection")
            }
            return account.answer(request) ?? .problem(404, .notFound)
        }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)))
        let events = await app.localEvents()
        _ = try await app.restoreSession()
        try await app.favorite("SK-1", in: .rijksmuseum)
        let refused = await #expect(throws: FavoriteMeError.self) { try await app.favorite("SK-GONE", in: .rijksmuseum) }
        #expect(refused?.problemType == .notFound)
        #expect(refused?.errorDescription == "SK-GONE is not in the Rijksmuseum's collection")
        try await app.favorite("SK-2", in: .rijksmuseum)
        #expect(await app.hearts(in: .rijksmuseum) == ["SK-1", "SK-2"])
        let event = await LocalDataTests.first(events) { if case .refused = $0 { true } else { false } }
        guard case .refused(let write, let problem)? = event else {
            Issue.record("the refusal was not reported")
            return
        }
        #expect(write.kind == .favorite(experience: .rijksmuseum, itemId: "SK-GONE"))
        #expect(problem.detail == "SK-GONE is not in the Rijksmuseum's collection")
        #expect(account.applied == ["favorite SK-1", "favorite SK-2"])
    }

    /// After a failure the queue waits (here up to a minute); the network's return, the app's foreground, or the
    /// app's own call send it at once, each write still in order.
    @Test(arguments: ["network", "foreground", "launch"])
    func aWaitIsCutShortWhenThereIsReasonToTryAgain(_ reason: String) async throws {
        let server = FlakyServer()
        let tokens = MemoryTokenStore(Fixture.session(Self.user))
        let store = MemoryLocalStore()
        let slow = RetryPolicy(firstDelay: 60, longestDelay: 120)
        let app = server.stub.client(tokens: tokens, local: store, policy: slow)
        _ = try await app.restoreSession()
        guard case .queued = try await app.favorite("1", in: .rijksmuseum) else {
            Issue.record("a write during the outage went through")
            return
        }
        let report = await app.sendPendingWrites()
        #expect(report.waiting == 1)
        #expect(try #require(report.nextAttempt).timeIntervalSinceNow > 20)
        // A heart made while the queue waits joins it without an early attempt.
        let failuresBefore = server.failures
        guard case .queued = try await app.favorite("2", in: .rijksmuseum) else {
            Issue.record("a write made during the backoff did not wait")
            return
        }
        #expect(server.failures == failuresBefore)

        server.down = false
        switch reason {
        case "network": await app.networkDidReturn()
        case "foreground": await app.appDidBecomeActive()
        default:  // the app is killed and launched again: the queue is on disk
            let relaunched = server.stub.client(tokens: tokens, local: store, policy: slow)
            _ = try await relaunched.restoreSession()
            try await Self.waitUntil { await relaunched.pendingWrites().isEmpty }
        }
        try await Self.waitUntil { server.account.applied.count == 2 }
        #expect(server.account.applied == ["favorite 1", "favorite 2"])
    }

    /// The server's own wait (Retry-After) is kept with the write: the network's return does not send it early.
    @Test func aRetryAfterIsNotCutShort() async throws {
        let account = FakeAccount()
        let stub = StubServer { request in
            account.answer(request).map { _ in .problem(429, .rateLimited, "slow down", retryAfter: 3600) }
                ?? .problem(404, .notFound)
        }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)))
        _ = try await app.restoreSession()
        try await app.favorite("1", in: .rijksmuseum)
        let attempts = stub.requests("PUT", "/v1/favorites").count
        await app.networkDidReturn()
        await app.appDidBecomeActive()
        #expect(stub.requests("PUT", "/v1/favorites").count == attempts)
        #expect(await app.hearts(in: .rijksmuseum) == ["1"])
    }
}
