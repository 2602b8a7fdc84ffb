import Contracts
import FavoriteMeClient
import Foundation
import NIOHTTP1
import TestSupport
import Testing

extension EndToEnd {
    /// The client recovering by itself from what a phone's life does to it: a live stream whose network went for
    /// fifteen reconnects, a refresh whose answer was lost while the app was suspended, a heart the server refuses
    /// among others it takes.
    @Suite struct ClientRecoveryTests {
        /// Fifteen failed reconnects: every wait capped (uncapped, the fifteenth would be 30 s × 2¹⁴); the network's
        /// return reconnects at once rather than after the wait under way, and the change made meanwhile arrives. The
        /// stream is its user's: when another user signs in on the tablet it ends, and that user's own stream starts.
        @Test(.timeLimit(.minutes(2))) func theStreamComesBackAtOnceAndEndsAtAnotherSignIn() async throws {
            let stack = try StackUnderTest.required()
            let network = try TCPRelay(to: "127.0.0.1", port: try #require(URL(string: stack.gateway)?.port))
            defer { network.stop() }
            let phone = try ClientLibraryTests.client(stack.gateway)
            let tablet = try ClientLibraryTests.client("http://127.0.0.1:\(network.port)",
                                                       policy: RetryPolicy(firstDelay: 30, longestDelay: 60))
            let email = uniqueEmail("live-recovery")
            _ = try await phone.signUp(email: email, password: accountPassword, experience: .mobiles)
            _ = try await tablet.signIn(email: email, password: accountPassword)
            var live = tablet.liveChanges(in: .mobiles).makeAsyncIterator()
            #expect(await live.next() == .connected)

            network.set(.refuse)
            var waits: [Duration] = []
            while waits.count < 15 {
                guard case .disconnected(_, let retryIn)? = await live.next() else {
                    Issue.record("the stream connected with the network gone")
                    return
                }
                waits.append(retryIn)
                if waits.count < 15 { await tablet.networkDidReturn() }  // not yet back: one more failure at once
            }
            #expect(waits.allSatisfy { $0 <= .seconds(60) }, "\(waits)")
            let pending = try #require(waits.last)
            #expect(pending >= .seconds(30))
            _ = try await phone.favorite("1", in: .mobiles)

            network.set(.forward)
            let returned = ContinuousClock.now
            await tablet.networkDidReturn()
            #expect(await live.next() == .connected)
            #expect(ContinuousClock.now - returned < pending)  // woken, not the backoff run out
            let missed = try await ClientLibraryTests.nextChanges(1, from: &live)
            #expect(missed.map(\.itemId) == ["1"])

            let otherEmail = uniqueEmail("live-other")
            let otherPhone = try ClientLibraryTests.client(stack.gateway)
            _ = try await otherPhone.signUp(email: otherEmail, password: accountPassword, experience: .mobiles)
            try await tablet.signIn(email: otherEmail, password: accountPassword)
            while let event = await live.next() {
                guard case .disconnected = event else {
                    Issue.record("the first user's stream went on after another signed in: \(event)")
                    return
                }
            }
            var next = tablet.liveChanges(in: .mobiles).makeAsyncIterator()
            #expect(await next.next() == .connected)
            _ = try await otherPhone.favorite("2", in: .mobiles)
            #expect(try await ClientLibraryTests.nextChanges(1, from: &next).map(\.itemId) == ["2"])
            #expect(await tablet.hearts(in: .mobiles) == ["2"])
        }

        /// A refresh whose answer is lost (the server rotated the token; the app was suspended before it heard),
        /// retried past the grace window (2 s in the test stack): the user stays signed in. A thief replaying the
        /// same old token without the refresh's key is still caught, and the session ends.
        @Test(.timeLimit(.minutes(1))) func aLostRefreshIsRecoveredAndAStolenTokenStillCaught() async throws {
            let stack = try StackUnderTest.required()
            let link = try TCPRelay(to: "127.0.0.1", port: try #require(URL(string: stack.gateway)?.port))
            defer { link.stop() }
            let signedUp = MemoryTokenStore()
            let user = try await ClientLibraryTests.client(stack.gateway, tokens: signedUp)
                .signUp(email: uniqueEmail("lost-refresh"), password: accountPassword, experience: .mobiles)
            var stale = try #require(await signedUp.load())
            stale.accessTokenExpiresAt = Date(timeIntervalSinceNow: -60)  // the next call refreshes first
            let stolen = stale.refreshToken  // a copy of the token, as a thief would hold it
            let tokens = MemoryTokenStore(stale)
            let app = try ClientLibraryTests.client("http://127.0.0.1:\(link.port)", tokens: tokens)

            link.set(.loseAnswers)
            await #expect(throws: FavoriteMeError.self) { try await app.me() }
            let pending = try #require(await tokens.load())
            #expect(pending.refreshToken == stolen && pending.pendingRefreshKey != nil)
            try await Task.sleep(for: .seconds(3))  // past the grace window
            link.set(.forward)
            #expect(try await app.me().id == user.id)
            let recovered = try #require(await tokens.load())
            #expect(recovered.refreshToken != stolen && recovered.pendingRefreshKey == nil)
            #expect(await app.storedUser?.id == user.id)

            let replay = try await StackClient(stack.gateway).send(.POST, "/v1/auth/refresh",
                                                                    json: RefreshRequest(refreshToken: stolen))
            #expect(replay.status == .unauthorized)
            #expect(replay.problem?.type == .refreshTokenReused)
            // The session is over for everyone: the app's next refresh is refused, and it is signed out.
            var expired = recovered
            expired.accessTokenExpiresAt = Date(timeIntervalSinceNow: -60)
            let sameDevice = try ClientLibraryTests.client(stack.gateway, tokens: MemoryTokenStore(expired))
            await #expect(throws: FavoriteMeError.signedOut) { try await sameDevice.me() }
        }

        /// Three hearts made offline, one of an item the catalog does not have: that one is refused once the network
        /// returns, its heart rolled back with the server's reason; the other two land.
        @Test func aRefusalRollsBackOneHeartAmongOthers() async throws {
            let stack = try StackUnderTest.required()
            let link = try TCPRelay(to: "127.0.0.1", port: try #require(URL(string: stack.gateway)?.port))
            defer { link.stop() }
            let app = try ClientLibraryTests.client("http://127.0.0.1:\(link.port)",
                                                    policy: RetryPolicy(firstDelay: 60, longestDelay: 120))
            try await app.signUp(email: uniqueEmail("one-refused"), password: accountPassword, experience: .mobiles)
            let events = await app.localEvents()
            let refusals = Task { () -> (PendingWrite, APIProblem)? in
                for await event in events { if case .refused(let write, let problem) = event { return (write, problem) } }
                return nil
            }
            link.set(.refuse)
            try await app.favorite("1", in: .mobiles)
            try await app.favorite("999999", in: .mobiles)  // no such phone
            try await app.favorite("2", in: .mobiles)
            #expect(await app.hearts(in: .mobiles) == ["1", "999999", "2"])
            link.set(.forward)
            let report = await app.sendPendingWrites()
            #expect(report.sent.count == 2 && report.waiting == 0)
            #expect(report.refused.count == 1 && report.refused.allSatisfy { $0.problem.isFinal })
            #expect(await app.hearts(in: .mobiles) == ["1", "2"])
            guard let (write, problem) = await refusals.value else {
                Issue.record("the refusal was not reported")
                return
            }
            #expect(write.kind == .favorite(experience: .mobiles, itemId: "999999"))
            #expect(!problem.detail.isEmpty && FavoriteMeError.refused(problem).errorDescription == problem.detail)
            #expect(try await app.favoriteIDs(in: .mobiles).itemIds.sorted() == ["1", "2"])
        }
    }
}
