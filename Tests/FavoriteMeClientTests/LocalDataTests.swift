import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// The device's documents as a phone treats them: damaged, from another version, from the single file of earlier
/// versions, full, large. No server: the client points at a port nothing listens on, as a phone offline.
@Suite struct LocalDataTests {
    static let user = UserProfile(id: UUID(), email: "someone@example.com", experience: .rijksmuseum, preferences: [:],
                                  createdAt: Date(timeIntervalSince1970: 1_700_000_000))
    static let session = StoredSession(accessToken: "access", refreshToken: "refresh",
                                       accessTokenExpiresAt: Date(timeIntervalSinceNow: 3600), user: user)

    /// Nothing listens on port 1: every request fails before it leaves, as with no network.
    static func offlineClient(_ local: any LocalStore) -> FavoriteMeClient {
        FavoriteMeClient(baseURL: URL(string: "http://127.0.0.1:1")!, tokens: MemoryTokenStore(session), local: local,
                         timeout: 2, watchesNetwork: false)
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("favme-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The first event `matching`, within a few seconds.
    static func first(_ events: AsyncStream<LocalEvent>, matching: @escaping @Sendable (LocalEvent) -> Bool)
        async -> LocalEvent?
    {
        await withTaskGroup(of: LocalEvent?.self) { group in
            group.addTask {
                for await event in events where matching(event) { return event }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test func aDamagedQueueIsSetAsideReportedAndNewWritesStillQueue() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileLocalStore(directory: directory)
        let damaged = Data("{\"format\":1,\"writes\":[{\"write\":".utf8)  // cut off mid-write
        try store.write(damaged, to: .queue, of: Self.user.id)

        let app = Self.offlineClient(store)
        let events = await app.localEvents()
        #expect(try await app.restoreSession() == Self.user)  // offline: from the stored session
        let setAside = await Self.first(events) { if case .setAside = $0 { true } else { false } }
        guard case .setAside(let document, let path, _)? = setAside else {
            Issue.record("the damaged queue was not reported")
            return
        }
        #expect(document == .queue)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged)  // kept, byte for byte

        guard case .queued(let write) = try await app.favorite("SK-C-5", in: .rijksmuseum) else {
            Issue.record("a write offline was not queued")
            return
        }
        #expect(await app.hearts(in: .rijksmuseum) == ["SK-C-5"])
        // On disk: a relaunch finds the write.
        let relaunched = Self.offlineClient(store)
        _ = try await relaunched.restoreSession()
        #expect(await relaunched.pendingWrites().map(\.id) == [write.id])
    }

    @Test func aDocumentFromANewerVersionIsKeptAsideNotOverwritten() async throws {
        let store = MemoryLocalStore()
        let newer = Data("{\"format\":99,\"writes\":[],\"somethingNew\":true}".utf8)
        store.place(newer, as: .queue, of: Self.user.id)
        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        try await app.favorite("SK-A-1", in: .rijksmuseum)
        #expect(store.setAsideDocuments.values.contains(newer))
        #expect(await app.pendingWrites().count == 1)
    }

    @Test func fieldsAnOlderVersionDidNotWriteAreNotAReasonToDropTheQueue() async throws {
        let store = MemoryLocalStore()
        let write = PendingWrite(.favorite(experience: .rijksmuseum, itemId: "SK-C-5"))
        var encoded = try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(write))
        // A queued write as a version without `status` and `failures` wrote it, beside a field this one ignores.
        encoded = ["format": 1, "writes": [["write": encoded]], "addedLater": "x"] as [String: Any]
        store.place(try JSONSerialization.data(withJSONObject: encoded), as: .queue, of: Self.user.id)
        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        #expect(await app.pendingWrites().map(\.id) == [write.id])
        #expect(store.setAsideDocuments.isEmpty)
    }

    /// A favorite as versions before its present shape kept it (flat fields beside `item`, no version).
    static func earlierFavorite(_ itemId: String) -> [String: Any] {
        ["experience": "rijksmuseum", "itemId": itemId, "title": "Title \(itemId)", "favoritedAt": "2023-11-14T22:13:20Z",
         "item": ["id": itemId, "experience": "rijksmuseum", "title": "Title \(itemId)"]]
    }

    /// The single `state.json` of earlier versions becomes the user's documents: its waiting writes kept, its copy
    /// (favorites of an earlier shape) dropped, to be synced again from the start of the feed.
    @Test func theSingleFileOfEarlierVersionsIsMigrated() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let waiting = PendingWrite(.unfavorite(experience: .rijksmuseum, itemId: "SK-A-1"))
        let single: [String: Any] = [
            "owner": Self.user.id.uuidString,
            "pending": [try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(waiting))],
            "syncedVersion": 7,
            "favorites": ["rijksmuseum": ["SK-A-1": Self.earlierFavorite("SK-A-1"), "SK-C-5": Self.earlierFavorite("SK-C-5")]],
        ]
        let file = directory.appendingPathComponent("state.json")
        try JSONSerialization.data(withJSONObject: single).write(to: file)

        let app = Self.offlineClient(FileLocalStore(directory: directory))
        _ = try await app.restoreSession()
        #expect(await app.pendingWrites().map(\.id) == [waiting.id])
        #expect(await app.hearts(in: .rijksmuseum).isEmpty)
        #expect(await app.outbox.syncedVersion == 0)  // the next sync reads the feed from its start
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    /// A copy, a journal and a queue written before favorites were their item, time and version: the queue is kept
    /// (a sent write's answer of the earlier shape dropped: the sync brings it), the copy and the journal are dropped,
    /// not set aside, the copy saved empty in the present format at once, and the next sync brings every favorite
    /// again, in the present shape.
    @Test func aCopyOfFavoritesOfAnEarlierShapeIsDroppedAndSyncedAgain() async throws {
        let store = MemoryLocalStore()
        let user = Self.user.id
        let sent = PendingWrite(.favorite(experience: .rijksmuseum, itemId: "SK-S"))
        let waiting = PendingWrite(.favorite(experience: .rijksmuseum, itemId: "SK-W"))
        let encode = { (write: PendingWrite) in try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(write)) }
        let queue: [String: Any] = ["format": 1, "writes": [
            ["write": try encode(sent), "status": ["sent": ["answer": Self.earlierFavorite("SK-S")]]],
            ["write": try encode(waiting), "status": ["waiting": [String: Any]()]],
        ]]
        let copy: [String: Any] = ["format": 1, "version": 2, "folded": [String](),
                                   "favorites": ["rijksmuseum": ["SK-A": Self.earlierFavorite("SK-A")]]]
        let line: [String: Any] = ["format": 1, "version": 3, "folded": [String](), "changes": [
            ["version": 3, "kind": "added", "experience": "rijksmuseum", "itemId": "SK-B", "at": "2023-11-14T22:13:20Z",
             "favorite": Self.earlierFavorite("SK-B")],
        ]]
        store.place(try JSONSerialization.data(withJSONObject: queue), as: .queue, of: user)
        store.place(try JSONSerialization.data(withJSONObject: copy), as: .favorites, of: user)
        store.place(try JSONSerialization.data(withJSONObject: line) + Data("\n".utf8), as: .journal, of: user)

        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        #expect(await app.pendingWrites().map(\.id) == [waiting.id])
        #expect(await app.outbox.queue.writes.map(\.status) == [.sent(answer: nil), .waiting])
        #expect(await app.hearts(in: .rijksmuseum) == ["SK-W"])
        #expect(await app.outbox.syncedVersion == 0)
        #expect(store.setAsideDocuments.isEmpty)
        let saved = try #require(store.read(.favorites, of: user))
        #expect(try JSONCoding.decoder.decode(FavoritesDocument.self, from: saved) == FavoritesDocument())
        #expect(store.read(.journal, of: user) == nil)
    }

    @Test func aWriteThatCannotBeSavedIsAnErrorNotAQueuedWrite() async throws {
        let app = Self.offlineClient(FullStore())
        _ = try await app.restoreSession()
        await #expect(throws: FavoriteMeError.self) { try await app.favorite("SK-C-5", in: .rijksmuseum) }
        #expect(await app.pendingWrites().isEmpty)
        #expect(await app.hearts(in: .rijksmuseum).isEmpty)
    }

    /// A heart saves the small queue only: the synced copy of 5,000 favorites is not written again.
    @Test func aHeartDoesNotRewriteTheSyncedCopy() async throws {
        let store = MemoryLocalStore()
        var copy = FavoritesDocument()
        copy.version = 5_000
        for index in 0..<5_000 { copy.favorites["rijksmuseum", default: [:]]["SK-\(index)"] = Fixture.favorite("SK-\(index)") }
        store.place(try JSONCoding.encoder.encode(copy), as: .favorites, of: Self.user.id)
        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        try await app.favorite("SK-C-5", in: .rijksmuseum)
        #expect(await app.hearts(in: .rijksmuseum).count == 5_001)
        #expect(store.writes[.favorites] == nil)
        #expect(store.writes[.queue] == 1)
        // Opened offline, the copy is served as synced.
        #expect(await app.syncedFavorites(in: .rijksmuseum).count == 5_000)
    }

    /// Hearts tapped all at once: every one saved, none saved over another.
    @Test func writesMadeAtOnceAreAllKept() async throws {
        let store = MemoryLocalStore()
        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 { group.addTask { try await app.favorite("SK-\(index)", in: .rijksmuseum) } }
            try await group.waitForAll()
        }
        #expect(await app.pendingWrites().count == 8)
        let relaunched = Self.offlineClient(store)
        _ = try await relaunched.restoreSession()
        #expect(await relaunched.pendingWrites().count == 8)
    }

    /// Earlier versions parked a write after six failures (its heart rolled back). Such a write is read as waiting,
    /// in its place: its heart is drawn again and it goes out in its turn, before the unfavorite made after it.
    @Test func aWriteParkedByAnEarlierVersionWaitsInItsPlace() async throws {
        let store = MemoryLocalStore()
        let parked = PendingWrite(.favorite(experience: .rijksmuseum, itemId: "SK-C-5"))
        let later = PendingWrite(.unfavorite(experience: .rijksmuseum, itemId: "SK-C-5"))
        let other = PendingWrite(.favorite(experience: .rijksmuseum, itemId: "SK-A-1"))
        let encode = { (write: PendingWrite) in try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(write)) }
        let document: [String: Any] = ["format": 1, "writes": [
            ["write": try encode(parked), "status": ["parked": ["reason": "failed 6 times"]], "failures": 6],
            ["write": try encode(later), "status": ["waiting": [String: Any]()]],
            ["write": try encode(other), "status": ["waiting": [String: Any]()]],
        ]]
        store.place(try JSONSerialization.data(withJSONObject: document), as: .queue, of: Self.user.id)
        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        #expect(await app.pendingWrites().map(\.id) == [parked.id, later.id, other.id])
        #expect(await app.hearts(in: .rijksmuseum) == ["SK-A-1"])  // the later unfavorite wins
        #expect(store.setAsideDocuments.isEmpty)
    }

    /// A write the server asked to wait for (a long Retry-After, kept with the write) is not sent before then, by
    /// any drain: no request leaves.
    @Test func aLongRetryAfterIsHonouredByEveryDrain() async throws {
        let store = MemoryLocalStore()
        var queued = QueuedWrite(PendingWrite(.favorite(experience: .rijksmuseum, itemId: "SK-C-5")))
        queued.notBefore = Date(timeIntervalSinceNow: 3600)
        var queue = QueueDocument()
        queue.writes = [queued]
        store.place(try JSONCoding.encoder.encode(queue), as: .queue, of: Self.user.id)
        let requests = Counter()
        let app = FavoriteMeClient(baseURL: URL(string: "http://127.0.0.1:1")!, tokens: MemoryTokenStore(Self.session),
                                   local: store, timeout: 2, watchesNetwork: false, log: { _ in requests.add() })
        let report = await app.sendPendingWrites()
        #expect(report.waiting == 1 && report.sent.isEmpty)
        #expect(requests.value == 0)
    }

    /// Signing out keeps the waiting writes for the same user's next session, and never shows them to another.
    @Test func theQueueBelongsToItsUser() async throws {
        let store = MemoryLocalStore()
        let app = Self.offlineClient(store)
        _ = try await app.restoreSession()
        try await app.favorite("SK-C-5", in: .rijksmuseum)
        try? await app.signOut()
        #expect(await app.pendingWrites().isEmpty)  // nobody signed in: nobody's queue is open

        var other = Self.session
        other.user.id = UUID()
        let otherApp = FavoriteMeClient(baseURL: URL(string: "http://127.0.0.1:1")!, tokens: MemoryTokenStore(other),
                                        local: store, timeout: 2)
        _ = try await otherApp.restoreSession()
        #expect(await otherApp.pendingWrites().isEmpty)
        #expect(await otherApp.hearts(in: .rijksmuseum).isEmpty)

        let back = Self.offlineClient(store)
        _ = try await back.restoreSession()
        #expect(await back.pendingWrites().map(\.kind) == [.favorite(experience: .rijksmuseum, itemId: "SK-C-5")])
    }
}

/// A device with no space left: every write fails.
private struct FullStore: LocalStore {
    struct NoSpace: Error {}
    func read(_ document: LocalDocument, of user: UUID) -> Data? { nil }
    func write(_ data: Data, to document: LocalDocument, of user: UUID) throws { throw NoSpace() }
    func setAside(_ document: LocalDocument, of user: UUID) throws -> String { throw NoSpace() }
    func remove(_ document: LocalDocument, of user: UUID) {}
}

@Suite struct DeviceCredentialStoreTests {
    @Test func storesKeepDeviceCredentialsPastSignOut() async throws {
        let directory = try LocalDataTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores: [any TokenStore] = [MemoryTokenStore(), FileTokenStore(url: directory.appendingPathComponent("s.json"))]
        for store in stores {
            try await store.saveDeviceCredential("credential-a", for: "a@example.com")
            try await store.save(LocalDataTests.session)
            try await store.clear()
            #expect(try await store.deviceCredential(for: "a@example.com") == "credential-a")
            #expect(try await store.deviceCredential(for: "b@example.com") == nil)
        }
    }
}

/// Counts from several tasks.
private final class Counter: @unchecked Sendable {
    // @unchecked: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
