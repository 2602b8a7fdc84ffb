import Contracts
import FavoriteMeClient
import Foundation
import Postgres
import TestSupport
import Testing

extension EndToEnd {
    /// The client's queue on a phone's network, through a relay in front of the gateway that loses answers, holds
    /// them, refuses connections or answers as a captive portal does; and `favme` killed in the middle of a flush.
    @Suite struct ClientQueueTests {
        static let item = "1"  // a phone of the mobiles catalog

        /// The relay, and a phone that talks through it (retries quick enough for a test).
        static func phone(_ stack: StackUnderTest, tokens: any TokenStore = MemoryTokenStore(),
                          local: any LocalStore = MemoryLocalStore(),
                          policy: RetryPolicy = RetryPolicy(attempts: 5, firstDelay: 1, longestDelay: 5))
            throws -> (FavoriteMeClient, TCPRelay)
        {
            let link = try TCPRelay(to: "127.0.0.1", port: try #require(URL(string: stack.gateway)?.port))
            let client = FavoriteMeClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(link.port)")),
                                          deviceName: "e2e phone", tokens: tokens, local: local, retryPolicy: policy,
                                          timeout: 5)
            return (client, link)
        }

        /// The user's event log as favorites-service keeps it: "type itemId", in order.
        static func eventLog(of user: UUID, _ stack: StackUnderTest) async throws -> [String] {
            try await stack.withFavoritesDatabase { pool in
                try await pool.query("""
                    SELECT event_type, coalesce(data->>'itemId', '') FROM favorites.events
                     WHERE stream_id = \("user-" + user.uuidString.lowercased()) ORDER BY version
                    """).decode((String, String).self)
            }.map { "\($0.0) \($0.1)".trimmingCharacters(in: .whitespaces) }
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
                #expect(replayed.sent.count == 1 && replayed.waiting == 0 && replayed.parked.isEmpty)
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
            #expect(third.itemId == "3")
            #expect(await flush.value.refused.isEmpty)
            #expect(await phone.pendingWrites().isEmpty)
            #expect(try await Self.eventLog(of: user.id, stack) == [
                "favorite-added 1", "favorite-added 2", "favorite-added 3",
            ])
        }

        /// A captive portal's page, then a proxy's 503 with Retry-After: retried with backoff, then parked (its heart
        /// rolled back, reported); retried by the app once the network is real, applied once.
        @Test func aPortalOrAnOverloadedProxyIsRetriedThenParked() async throws {
            let stack = try StackUnderTest.required()
            let (phone, link) = try Self.phone(stack, policy: RetryPolicy(attempts: 3, firstDelay: 0.1, longestDelay: 2))
            defer { link.stop() }
            let user = try await phone.signUp(email: uniqueEmail("portal"), password: accountPassword,
                                              experience: .mobiles)
            let events = await phone.localEvents()

            let portal = "<html><body>Sign in to the café Wi-Fi</body></html>"
            link.set(.answer("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \(portal.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(portal)"))
            guard case .queued(let write) = try await phone.favorite(Self.item, in: .mobiles) else {
                Issue.record("a portal's page was taken for the server's answer")
                return
            }
            let report = await phone.sendPendingWrites()
            #expect(report.parked == [write])
            #expect(await phone.parkedWrites() == [write])
            #expect(await phone.hearts(in: .mobiles).isEmpty)
            var reported = false
            for await event in events {
                if case .parked(let parked, _) = event { reported = parked == write; break }
            }
            #expect(reported)

            let problem = #"{"type":"service-unreachable","title":"Busy","status":503,"detail":"try later","requestId":"proxy"}"#
            link.set(.answer("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
                + "Retry-After: 1\r\nContent-Length: \(problem.utf8.count)\r\nConnection: close\r\n\r\n\(problem)"))
            let started = Date()
            let overloaded = await phone.retryParkedWrites()
            #expect(overloaded.parked.map(\.id) == [write.id])
            #expect(Date().timeIntervalSince(started) >= 2)  // two waits of Retry-After: 1 between three attempts

            link.set(.forward)
            let sent = await phone.retryParkedWrites()
            #expect(sent.sent.map(\.id) == [write.id] && sent.parked.isEmpty)
            #expect(await phone.hearts(in: .mobiles) == [Self.item])
            #expect(try await Self.eventLog(of: user.id, stack) == ["favorite-added 1"])
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
            link.set(.holdAnswers(seconds: 5))  // longer than B's sign-in takes on a busy machine
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
            link.set(.loseAnswers)
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
