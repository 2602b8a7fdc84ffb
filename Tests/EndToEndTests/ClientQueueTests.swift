import Contracts
import FavoriteMeClient
import Foundation
import Locking
import Postgres
import TestSupport
import Testing

extension EndToEnd {
    /// The client's queue on a phone's network, through a relay in front of the gateway that loses answers, holds
    /// them, refuses connections or answers as a captive portal does; and `favme` killed in the middle of a flush.
    @Suite struct ClientQueueTests {
        static let item = "1"  // a phone of the mobiles catalog

        /// The relay, and a phone that talks through it. By default its queue waits half a minute or more after a
        /// failure, so that only the test's own calls send it; `log` hears of every request.
        static func phone(_ stack: StackUnderTest, tokens: any TokenStore = MemoryTokenStore(),
                          local: any LocalStore = MemoryLocalStore(),
                          policy: RetryPolicy = RetryPolicy(firstDelay: 60, longestDelay: 120), timeout: TimeInterval = 5,
                          log: (@Sendable (RequestRecord) -> Void)? = nil)
            throws -> (FavoriteMeClient, TCPRelay)
        {
            let link = try TCPRelay(to: "127.0.0.1", port: try #require(URL(string: stack.gateway)?.port))
            let client = FavoriteMeClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(link.port)")),
                                          deviceName: "e2e phone", tokens: tokens, local: local, retryPolicy: policy,
                                          timeout: timeout, watchesNetwork: false, log: log)
            return (client, link)
        }

        /// The user's event log as favorites-service keeps it: "type itemId", in order.
        static func eventLog(of user: UUID, _ stack: StackUnderTest) async throws -> [String] {
            try await stack.withFavoritesDatabase { pool in
                try await pool.query("""
                    SELECT event_type || ' ' || coalesce(data->>'itemId', '') FROM favorites.events
                     WHERE stream_id = \("user-" + user.uuidString.lowercased()) ORDER BY version
                    """).values(String.self)
            }.map { $0.trimmingCharacters(in: .whitespaces) }
        }

        /// A favorite, an unfavorite and a clear of the same item, each applied by the server but its answer lost;
        /// while the phone is offline the user's tablet changes the same item; the phone's replays then change
        /// nothing. Without the Idempotency-Key each replay would undo the tablet's change.
        @Test func lostAnswersReplayedLaterApplyOnce() async throws {
            let stack = try StackUnderTest.required()
            let (phone, link) = try Self.phone(stack)
            defer { link.stop() }
            let email = uniqueEmail("lost-answers")
            let user = try await phone.signUp(email: email, password: accountPassword, experience: .mobiles)
            let tablet = try ClientLibraryTests.client(stack.gateway)
            try await tablet.signIn(email: email, password: accountPassword)

            func lostAnswer(_ write: () async throws -> WriteResult<Void>, then tabletChange: () async throws -> Void)
                async throws
            {
                link.set(.loseAnswers)
                guard case .queued = try await write() else {
                    Issue.record("a write whose answer was lost reported done")
                    return
                }
                link.set(.refuse)
                let offline = await phone.sendPendingWrites()  // the retry finds no network
                #expect(offline.sent.isEmpty && offline.waiting == 1)
                try await tabletChange()
                link.set(.forward)
                let replayed = await phone.sendPendingWrites()
                #expect(replayed.sent.count == 1 && replayed.waiting == 0 && replayed.refused.isEmpty)
            }

            try await lostAnswer({ try await phone.favorite(Self.item, in: .mobiles).map { _ in () } }) {
                try await tablet.unfavorite(Self.item, in: .mobiles)
            }
            #expect(try await tablet.favoriteIDs(in: .mobiles).itemIds == [])

            try await tablet.favorite(Self.item, in: .mobiles)
            try await lostAnswer({ try await phone.unfavorite(Self.item, in: .mobiles) }) {
                try await tablet.favorite(Self.item, in: .mobiles)
            }
            #expect(try await tablet.favoriteIDs(in: .mobiles).itemIds == [Self.item])

            try await lostAnswer({ try await phone.clearFavorites(in: .mobiles) }) {
                try await tablet.favorite(Self.item, in: .mobiles)
            }
            #expect(try await tablet.favoriteIDs(in: .mobiles).itemIds == [Self.item])

            #expect(try await Self.eventLog(of: user.id, stack) == [
                "favorite-added 1", "favorite-removed 1",  // the phone's favorite, the tablet's unfavorite
                "favorite-added 1", "favorite-removed 1", "favorite-added 1",
                "favorites-cleared", "favorite-added 1",
            ])
            // The phone's own copy agrees once synced.
            try await phone.syncFavorites()
            #expect(await phone.hearts(in: .mobiles) == [Self.item])
        }

        /// A write made while a flush is sending joins it: done, not queued, and sent after the ones before it.
        @Test func aWriteMadeDuringAFlushIsSentByIt() async throws {
            let stack = try StackUnderTest.required()
            let (phone, link) = try Self.phone(stack)
            defer { link.stop() }
            let user = try await phone.signUp(email: uniqueEmail("during-flush"), password: accountPassword,
                                              experience: .mobiles)
            link.set(.refuse)
            for item in ["1", "2"] {
                guard case .queued = try await phone.favorite(item, in: .mobiles) else {
                    Issue.record("a write offline was not queued")
                    return
                }
            }
            link.set(.holdAnswers(seconds: 0.5))  // slow: the flush takes a second
            let flush = Task { await phone.sendPendingWrites() }
            try await Task.sleep(for: .milliseconds(200))
            guard case .done(let third) = try await phone.favorite("3", in: .mobiles) else {
                Issue.record("a write made during a flush, online, was left queued")
                return
            }
            #expect(third.item.id == "3")
            #expect(await flush.value.refused.isEmpty)
            #expect(await phone.pendingWrites().isEmpty)
            #expect(try await Self.eventLog(of: user.id, stack) == [
                "favorite-added 1", "favorite-added 2", "favorite-added 3",
            ])
        }

        /// A captive portal's page, then a proxy's 503 with Retry-After: the write waits, its heart drawn (it used to
        /// be parked and rolled back), the proxy's wait is honoured even when the network is said to be back, and it
        /// lands once when the network is real.
        @Test func aPortalOrAnOverloadedProxyNeverTakesTheHeartBack() async throws {
            let stack = try StackUnderTest.required()
            let (phone, link) = try Self.phone(stack)
            defer { link.stop() }
            let user = try await phone.signUp(email: uniqueEmail("portal"), password: accountPassword,
                                              experience: .mobiles)
            let portal = "<html><body>Sign in to the café Wi-Fi</body></html>"
            link.set(.answer("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \(portal.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(portal)"))
            guard case .queued = try await phone.favorite(Self.item, in: .mobiles) else {
                Issue.record("a portal's page was taken for the server's answer")
                return
            }
            for _ in 0..<8 {  // more attempts than the six after which it used to be parked
                let report = await phone.sendPendingWrites()
                #expect(report.waiting == 1 && report.refused.isEmpty && report.sent.isEmpty)
                #expect(await phone.hearts(in: .mobiles) == [Self.item])
            }

            let problem = #"{"type":"service-unreachable","title":"Busy","status":503,"detail":"try later","requestId":"proxy"}"#
            link.set(.answer("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
                + "Retry-After: 2\r\nContent-Length: \(problem.utf8.count)\r\nConnection: close\r\n\r\n\(problem)"))
            let overloaded = await phone.sendPendingWrites()
            #expect(overloaded.waiting == 1)
            let due = try #require(overloaded.nextAttempt)
            link.set(.forward)
            let early = await phone.sendPendingWrites()  // the proxy said 2 s: not before
            #expect(early.sent.isEmpty && early.waiting == 1)
            try await Task.sleep(for: .seconds(max(0, due.timeIntervalSinceNow) + 0.2))
            _ = await phone.sendPendingWrites()  // (or the retry scheduled for then has sent it already)
            #expect(await phone.pendingWrites().isEmpty)
            #expect(await phone.hearts(in: .mobiles) == [Self.item])
            #expect(try await Self.eventLog(of: user.id, stack) == ["favorite-added 1"])
        }

        /// The network gone for longer than the six failures (about half a minute) after which a write used to be
        /// parked and its heart rolled back: refused connections, timeouts, dropped connections (the server acting,
        /// its answer lost), a proxy's 503 and a portal's page, in turn. No heart is taken back meanwhile, none is
        /// reported refused; when the network returns, every queued heart lands, each once, in the order made. The
        /// queue's backoff is short here (50 ms to 0.5 s) so that the test takes seconds, not minutes.
        @Test(.timeLimit(.minutes(2))) func aLongOutageLosesNoHeart() async throws {
            let stack = try StackUnderTest.required()
            let attempts = Locked<[String]>([])
            let (phone, link) = try Self.phone(stack, policy: RetryPolicy(firstDelay: 0.05, longestDelay: 0.5),
                                               timeout: 1, log: { request in
                                                   guard request.path.hasPrefix("/v1/favorites/") else { return }
                                                   attempts.withLock { $0.append(request.status.map(String.init) ?? "lost") }
                                               })
            defer { link.stop() }
            let user = try await phone.signUp(email: uniqueEmail("outage"), password: accountPassword,
                                              experience: .mobiles)
            let events = await phone.localEvents()
            let refusals = Task {
                var refused: [PendingWrite] = []
                for await event in events { if case .refused(let write, _) = event { refused.append(write) } }
                return refused
            }
            let problem = #"{"type":"service-unreachable","title":"Busy","status":503,"detail":"later","requestId":"p"}"#
            let portal = "<html>Sign in to the Wi-Fi</html>"
            let outage: [TCPRelay.Mode] = [
                .refuse, .swallow, .loseAnswers,
                .answer("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nContent-Length: "
                    + "\(problem.utf8.count)\r\nConnection: close\r\n\r\n\(problem)"),
                .answer("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \(portal.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(portal)"),
            ]
            link.set(outage[0])
            try await phone.favorite("1", in: .mobiles)
            try await phone.favorite("2", in: .mobiles)
            try await phone.unfavorite("1", in: .mobiles)
            try await phone.favorite("3", in: .mobiles)
            var round = 0
            while attempts.withLock({ $0.count }) < 20 || round < outage.count {
                link.set(outage[round % outage.count])
                round += 1
                for _ in 0..<5 {
                    #expect(await phone.hearts(in: .mobiles) == ["2", "3"])
                    #expect(await phone.pendingWrites().count == 4)
                    try await Task.sleep(for: .milliseconds(300))
                }
            }
            link.set(.forward)
            await phone.networkDidReturn()
            for _ in 0..<100 where !(await phone.pendingWrites()).isEmpty { try await Task.sleep(for: .milliseconds(100)) }
            #expect(await phone.pendingWrites().isEmpty)
            #expect(try await Self.eventLog(of: user.id, stack) == [
                "favorite-added 1", "favorite-added 2", "favorite-removed 1", "favorite-added 3",
            ])
            #expect(await phone.hearts(in: .mobiles) == ["2", "3"])
            refusals.cancel()
            #expect(await refusals.value.isEmpty)
            #expect(attempts.withLock { $0.count } >= 20)
        }

        /// Two users on one device: A's queued write never goes out with B's session, not even when A's refresh,
        /// begun before B signed in, answers after; it goes out when A signs in again.
        @Test func oneUsersQueueNeverReachesAnotherAccount() async throws {
            let stack = try StackUnderTest.required()
            let emailA = uniqueEmail("device-a")
            let emailB = uniqueEmail("device-b")
            let setupA = MemoryTokenStore()
            let userA = try await ClientLibraryTests.client(stack.gateway, tokens: setupA)
                .signUp(email: emailA, password: accountPassword, experience: .mobiles)
            let userB = try await ClientLibraryTests.client(stack.gateway)
                .signUp(email: emailB, password: accountPassword, experience: .mobiles)
            var stale = try #require(await setupA.load())
            stale.accessTokenExpiresAt = Date(timeIntervalSinceNow: -60)  // A's next call refreshes first

            let (device, link) = try Self.phone(stack, tokens: MemoryTokenStore(stale))
            defer { link.stop() }
            link.set(.refuse)
            #expect(try await device.restoreSession()?.id == userA.id)  // offline: from what is stored
            guard case .queued = try await device.favorite(Self.item, in: .mobiles) else {
                Issue.record("A's write offline was not queued")
                return
            }
            // Held long enough that B's sign-in (a bcrypt hash: seconds on a busy machine) always comes first.
            link.set(.holdAnswers(seconds: 10))
            let flushA = Task { await device.sendPendingWrites() }  // refreshes A's token: its answer is held
            #expect(try await eventually({ link.answersHeld }, until: { $0 > 0 }) == 1)
            link.set(.forward)
            #expect(try await device.signIn(email: emailB, password: accountPassword).id == userB.id)
            let reportA = await flushA.value
            #expect(reportA.sent.isEmpty)
            // A's refresh answers at last: it must change nothing on B's device.
            #expect(try await eventually({ link.answersReleased }, until: { $0 > 0 }) == 1)
            try await Task.sleep(for: .milliseconds(500))  // the client reads and drops it
            #expect(await device.storedUser?.id == userB.id)
            #expect(await device.pendingWrites().isEmpty)
            #expect(try await device.favoriteIDs(in: .mobiles).itemIds.isEmpty)
            #expect(try await Self.eventLog(of: userB.id, stack).isEmpty)
            #expect(try await Self.eventLog(of: userA.id, stack).isEmpty)

            try await device.signIn(email: emailA, password: accountPassword)
            _ = await device.sendPendingWrites()
            #expect(try await device.favoriteIDs(in: .mobiles).itemIds == [Self.item])
            #expect(try await Self.eventLog(of: userA.id, stack) == ["favorite-added 1"])
            #expect(try await Self.eventLog(of: userB.id, stack).isEmpty)
        }

        /// `favme` killed (SIGKILL) in the middle of a flush whose answers are lost, then run again: each queued
        /// write is in the server's log once, in order.
        @Test func favmeKilledMidFlushLosesNothingAndRepeatsNothing() async throws {
            let stack = try StackUnderTest.required()
            let favme = try Favme()
            let configDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("favme-kill-\(UUID())")
            defer { try? FileManager.default.removeItem(at: configDirectory) }
            let tokens = FileTokenStore(url: configDirectory.appendingPathComponent("session.json"))
            let user = try await ClientLibraryTests.client(stack.gateway, tokens: tokens)
                .signUp(email: uniqueEmail("killed"), password: accountPassword, experience: .mobiles)
            let link = try TCPRelay(to: "127.0.0.1", port: try #require(URL(string: stack.gateway)?.port))
            defer { link.stop() }
            let arguments = ["--server", "http://127.0.0.1:\(link.port)", "--config-dir", configDirectory.path]

            link.set(.refuse)
            for item in ["1", "2", "3"] {
                let queued = try await favme.run(["fav", item, "--json"] + arguments)
                #expect(queued.status == 0 && queued.output.contains("\"queued\""))
            }
            // The first write is applied and its answer held: favme is killed while it waits for it, as an app is.
            link.set(.holdAnswers(seconds: 30))
            let flushing = try favme.start(["sync"] + arguments)
            var applied: [String] = []
            for _ in 0..<100 where applied.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                applied = try await Self.eventLog(of: user.id, stack)
            }
            #expect(applied == ["favorite-added 1"])  // the first write applied, its answer lost
            kill(flushing.processIdentifier, SIGKILL)
            flushing.waitUntilExit()
            #expect(flushing.terminationReason == .uncaughtSignal)

            link.set(.forward)
            let resumed = try await favme.run(["sync", "--json"] + arguments)
            #expect(resumed.status == 0)
            #expect(try await Self.eventLog(of: user.id, stack) == [
                "favorite-added 1", "favorite-added 2", "favorite-added 3",
            ])
            let after = FavoriteMeClient(baseURL: try #require(URL(string: stack.gateway)), tokens: tokens,
                                         local: FileLocalStore(directory: configDirectory))
            _ = try await after.restoreSession()
            #expect(await after.pendingWrites().isEmpty)
            #expect(await after.hearts(in: .mobiles) == ["1", "2", "3"])
        }
    }
}

/// The `favme` built beside the tests.
struct Favme {
    let executable: URL

    init() throws {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("favme")
        guard FileManager.default.isExecutableFile(atPath: beside.path) else {
            throw StackError("no favme at \(beside.path): build it first (swift build --build-tests builds it)")
        }
        executable = beside
    }

    func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs to the end; its exit status and standard output.
    func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
