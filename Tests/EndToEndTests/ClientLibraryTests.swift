import Contracts
import FavoriteMeClient
import Foundation
import Locking
import Postgres
import TestSupport
import Testing

extension EndToEnd {
    /// The apps' Swift library against the stack: the FavoriteMe journeys made through it (no hand-built request),
    /// its sessions refreshing once per burst, and writes made offline reaching the server exactly once.
    @Suite struct ClientLibraryTests {
        /// Counts the requests a client sends, by method and path.
        final class RequestLog: Sendable {
            private let entries = Locked<[String]>([])
            var all: [String] { entries.withLock { $0 } }
            func record(_ method: String, _ path: String) { entries.withLock { $0.append("\(method) \(path)") } }
            func count(_ entry: String) -> Int { all.filter { $0 == entry }.count }
        }

        static func client(_ baseURL: String, tokens: any TokenStore = MemoryTokenStore(),
                           local: any LocalStore = MemoryLocalStore(), log: RequestLog? = nil,
                           policy: RetryPolicy = RetryPolicy()) throws -> FavoriteMeClient {
            var hook: (@Sendable (RequestRecord) -> Void)?
            if let log { hook = { request in log.record(request.method, request.path) } }
            return FavoriteMeClient(baseURL: try #require(URL(string: baseURL)), deviceName: "e2e library",
                                    tokens: tokens, local: local, retryPolicy: policy, timeout: 5, watchesNetwork: false,
                                    log: hook)
        }

        @Test(arguments: [ExperienceID.ticketmaster, .rijksmuseum])
        func theJourneyThroughTheLibrary(experience: ExperienceID) async throws {
            let stack = try StackUnderTest.required()
            let tokens = MemoryTokenStore()
            let app = try Self.client(stack.gateway, tokens: tokens)
            let other: ExperienceID = experience == .ticketmaster ? .rijksmuseum : .ticketmaster
            let email = uniqueEmail("library-\(experience)")
            let user = try await app.signUp(email: email, password: accountPassword, experience: experience)
            #expect(user.experience == experience)
            #expect(try await app.experiences().contains { $0.id == experience })

            let page = try await app.items(in: experience, matching: JourneyTests.searches[experience]?
                .removingPercentEncoding)
            let item = try #require(page.items.first)
            #expect(await app.hearts(in: experience).isEmpty)
            guard case .done(let favorite) = try await app.favorite(item.id, in: experience) else {
                Issue.record("the favorite was queued while online")
                return
            }
            #expect(favorite.item.id == item.id && favorite.item.experience == experience && favorite.version >= 1)
            #expect(await app.hearts(in: experience) == [item.id])
            #expect(try await app.favoriteIDs(in: experience).itemIds == [item.id])
            #expect(try await app.favorites(in: experience).items.map(\.item.id) == [item.id])
            #expect(try await app.item(item.id, in: experience).id == item.id)

            try await app.unfavorite(item.id, in: experience)
            #expect(await app.hearts(in: experience).isEmpty)
            try await app.favorite(item.id, in: experience)
            #expect(try await app.updateProfile(experience: other).experience == other)
            #expect(try await app.favoriteIDs(in: other).itemIds.isEmpty)
            try await app.clearFavorites(in: experience)
            #expect(try await app.favorites(in: experience).items.isEmpty)

            // "Open into the user's experience if still signed in": one call, on a new launch with the stored session.
            let relaunched = try Self.client(stack.gateway, tokens: tokens)
            #expect(try await relaunched.restoreSession()?.experience == other)

            let credential = try #require(await tokens.deviceCredential(for: email))
            try await app.signOut()
            await #expect(throws: FavoriteMeError.signedOut) { try await app.me() }
            #expect(try await app.restoreSession() == nil)
            let back = try await app.signIn(email: email, password: accountPassword)
            #expect(back.id == user.id)
            // The device credential outlived the sign-out and the server knew it: no new one was given.
            #expect(await tokens.deviceCredential(for: email) == credential)
            let wrong = await #expect(throws: FavoriteMeError.self) {
                try await app.signIn(email: email, password: "not the password at all")
            }
            #expect(wrong?.problemType == .invalidCredentials)
            try await app.deleteAccount(password: accountPassword)
            #expect(try await app.restoreSession() == nil)
        }

        /// A device whose copy claims a position past the account's log (restored from a backup, say) is told so,
        /// forgets that copy and syncs the account from the start, instead of skipping its changes for good.
        @Test func aCopyAheadOfTheLogIsSyncedAgainFromTheStart() async throws {
            let stack = try StackUnderTest.required()
            let tokens = MemoryTokenStore()
            let app = try Self.client(stack.gateway, tokens: tokens)
            let user = try await app.signUp(email: uniqueEmail("ahead"), password: accountPassword,
                                            experience: .mobiles)
            guard case .done(var ghost) = try await app.favorite("1", in: .mobiles) else {
                Issue.record("the favorite was queued while online")
                return
            }
            try await app.favorite("2", in: .mobiles)
            ghost.item.id = "3"  // a favorite only the stale copy has
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let ahead = try encoder.encode(AheadCopy(version: 999, favorites: ["mobiles": ["3": ghost]]))
            let local = MemoryLocalStore()
            local.place(ahead, as: .favorites, of: user.id)
            let log = RequestLog()
            let restored = try Self.client(stack.gateway, tokens: tokens, local: local, log: log)
            let report = try await restored.syncFavorites()
            #expect(report.changes.compactMap(\.itemId) == ["1", "2"])
            #expect(Set(await restored.syncedFavorites(in: .mobiles).map(\.item.id)) == ["1", "2"])
            #expect(log.count("GET /v1/favorites/changes") == 2)  // refused at 999, then read from 0
        }

        /// Twenty calls at once with an expired access token: one refresh request, and every call answered.
        @Test(arguments: [false, true])
        func aBurstWithAnExpiredTokenRefreshesOnce(serverSaysSo: Bool) async throws {
            let stack = try StackUnderTest.required()
            let signedIn = MemoryTokenStore()
            try await Self.client(stack.gateway, tokens: signedIn)
                .signUp(email: uniqueEmail("refresh"), password: accountPassword, experience: .rijksmuseum)
            var session = try #require(await signedIn.load())
            if serverSaysSo {
                // The device's clock thinks the token good; the server does not (its signature is broken).
                session.accessToken += "x"
            } else {
                session.accessTokenExpiresAt = Date(timeIntervalSinceNow: -60)
            }
            let log = RequestLog()
            let app = try Self.client(stack.gateway, tokens: MemoryTokenStore(session), log: log)
            let users = try await withThrowingTaskGroup(of: UUID.self) { group in
                for _ in 0..<20 { group.addTask { try await app.me().id } }
                return try await group.reduce(into: [UUID]()) { $0.append($1) }
            }
            #expect(users.count == 20 && Set(users) == [session.user.id])
            #expect(log.count("POST /v1/auth/refresh") == 1)
            // The refreshed session is kept: the next call needs no refresh.
            _ = try await app.me()
            #expect(log.count("POST /v1/auth/refresh") == 1)
        }

        /// A refresh the server refuses (the refresh token already used) signs the user out cleanly.
        /// Two devices of one user: a heart on the phone fills on the tablet as it happens; the tablet loses its
        /// network while the phone goes on, and once back it gets every change it missed, once, in order.
        @Test(.timeLimit(.minutes(1))) func liveChangesReachTheOtherDeviceAndSurviveItsNetworkGoing() async throws {
            let stack = try StackUnderTest.required()
            let gateway = try #require(URL(string: stack.gateway)?.port)
            let network = try TCPRelay(to: "127.0.0.1", port: gateway)
            defer { network.stop() }
            let phone = try Self.client(stack.gateway)
            let tablet = try Self.client("http://127.0.0.1:\(network.port)")
            let email = uniqueEmail("library-live")
            _ = try await phone.signUp(email: email, password: accountPassword, experience: .mobiles)
            _ = try await tablet.signIn(email: email, password: accountPassword)
            var live = tablet.liveChanges(in: .mobiles).makeAsyncIterator()
            #expect(await live.next() == .connected)

            _ = try await phone.favorite("1", in: .mobiles)
            let first = try await Self.nextChanges(1, from: &live)
            #expect(first.map(\.itemId) == ["1"] && first.map(\.kind) == [.added])
            #expect(await tablet.hearts(in: .mobiles) == ["1"])

            network.set(.refuse)  // the tablet's network goes: its stream is cut, reconnecting fails
            guard case .disconnected? = await live.next() else {
                Issue.record("the tablet did not report its stream cut")
                return
            }
            _ = try await phone.favorite("2", in: .mobiles)
            _ = try await phone.unfavorite("1", in: .mobiles)
            network.set(.forward)
            let missed = try await Self.nextChanges(2, from: &live)
            #expect(missed.map(\.itemId) == ["2", "1"] && missed.map(\.kind) == [.added, .removed])
            #expect(await tablet.hearts(in: .mobiles) == ["2"])
        }

        /// The next `count` changes a live stream tells, past its other events.
        static func nextChanges(_ count: Int, from live: inout AsyncStream<LiveChange>.Iterator) async throws
            -> [FavoriteChange]
        {
            var changes: [FavoriteChange] = []
            while changes.count < count {
                switch await live.next() {
                case .changed(let change): changes.append(change)
                case nil: throw StackError("the live stream ended after \(changes.count) changes")
                default: continue
                }
            }
            return changes
        }

        @Test func aRefusedRefreshSignsOut() async throws {
            let stack = try StackUnderTest.required()
            let store = MemoryTokenStore()
            let first = try Self.client(stack.gateway, tokens: store)
            try await first.signUp(email: uniqueEmail("reused"), password: accountPassword, experience: .ticketmaster)
            var stale = try #require(await store.load())
            stale.accessTokenExpiresAt = Date(timeIntervalSinceNow: -60)
            // Another device refreshes with this refresh token first; past the reuse grace (2 s in the test stack), a
            // second use is taken for theft.
            let thief = try Self.client(stack.gateway, tokens: MemoryTokenStore(stale))
            _ = try await thief.me()
            try await Task.sleep(for: .seconds(3))
            let victim = try Self.client(stack.gateway, tokens: MemoryTokenStore(stale))
            await #expect(throws: FavoriteMeError.signedOut) { try await victim.me() }
            #expect(await victim.storedUser == nil)
        }

        /// Favorites and unfavorites made with the gateway away wait in the queue (hearts drawn at once), and reach
        /// the server in order, each once.
        @Test func offlineWritesAreReplayedInOrderEachOnce() async throws {
            let stack = try StackUnderTest.required()
            let gatewayPort = try #require(URL(string: stack.gateway)?.port)
            let link = try TCPRelay(to: "127.0.0.1", port: gatewayPort)
            defer { link.stop() }
            let local = MemoryLocalStore()
            let app = try Self.client("http://127.0.0.1:\(link.port)", local: local)
            let user = try await app.signUp(email: uniqueEmail("offline"), password: accountPassword,
                                            experience: .rijksmuseum)
            let items = try await app.items(in: .rijksmuseum, matching: "rembrandt").items.map(\.id)
            try #require(items.count >= 3)

            link.set(.refuse)
            for write in [0, 1, 2] {
                guard case .queued = try await app.favorite(items[write], in: .rijksmuseum) else {
                    Issue.record("a favorite went through with the gateway away")
                    return
                }
            }
            guard case .queued = try await app.unfavorite(items[0], in: .rijksmuseum) else {
                Issue.record("an unfavorite went through with the gateway away")
                return
            }
            #expect(await app.hearts(in: .rijksmuseum) == Set(items[1...2]))
            #expect(await app.pendingWrites().count == 4)

            link.set(.forward)
            let drained = await app.sendPendingWrites()
            #expect(drained.sent.count == 4 && drained.refused.isEmpty && drained.waiting == 0)
            #expect(try await app.favoriteIDs(in: .rijksmuseum).itemIds.sorted() == Array(items[1...2]).sorted())
            #expect(await app.hearts(in: .rijksmuseum) == Set(items[1...2]))

            let events = try await stack.withFavoritesDatabase { pool in
                try await pool.query("""
                    SELECT event_type || ' ' || (data->>'itemId') FROM favorites.events
                     WHERE stream_id = \("user-" + user.id.uuidString.lowercased()) ORDER BY version
                    """).values(String.self)
            }
            #expect(events == [
                "favorite-added \(items[0])", "favorite-added \(items[1])", "favorite-added \(items[2])",
                "favorite-removed \(items[0])",
            ])

            // A second device syncs through the changes feed and draws the same hearts.
            let device = try Self.client(stack.gateway)
            try await device.signIn(email: user.email, password: accountPassword)
            let changes = try await device.syncFavorites().changes
            #expect(changes.count == 4)
            #expect(await device.hearts(in: .rijksmuseum) == Set(items[1...2]))
            #expect(await device.syncedFavorites(in: .rijksmuseum).count == 2)
        }

        /// A write the server refuses is dropped from the queue, its heart rolled back.
        @Test func aRefusedQueuedWriteRollsItsHeartBack() async throws {
            let stack = try StackUnderTest.required()
            let gatewayPort = try #require(URL(string: stack.gateway)?.port)
            let link = try TCPRelay(to: "127.0.0.1", port: gatewayPort)
            defer { link.stop() }
            let app = try Self.client("http://127.0.0.1:\(link.port)")
            try await app.signUp(email: uniqueEmail("rollback"), password: accountPassword, experience: .rijksmuseum)
            link.set(.refuse)
            try await app.favorite("SK-X-404404", in: .rijksmuseum)  // no such object
            #expect(await app.hearts(in: .rijksmuseum) == ["SK-X-404404"])
            link.set(.forward)
            let report = await app.sendPendingWrites()
            #expect(report.refused.map(\.problem.type) == [.notFound])
            #expect(await app.hearts(in: .rijksmuseum).isEmpty)
        }
    }
}

/// A synced copy as a device might hold it (the client's document format 1).
private struct AheadCopy: Encodable {
    var format = 2
    var version: Int64
    var favorites: [String: [String: Favorite]]
}
