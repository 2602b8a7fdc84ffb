import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// The synced copy is saved in proportion to what changed: a sync, the echo of the user's own heart included,
/// appends one line to the journal; the whole copy is written again only once the journal has grown as large as it.
/// A journal cut off by a crash, or damaged, loses nothing the server cannot send again.
@Suite struct JournalTests {
    static let user = Fixture.user()

    /// A copy of `count` favorites already on the device, at position `count` of the feed.
    static func storeWithCopy(of count: Int) throws -> MemoryLocalStore {
        var copy = FavoritesDocument()
        copy.version = Int64(count)
        for index in 0..<count { copy.favorites["rijksmuseum", default: [:]]["SK-\(index)"] = Fixture.favorite("SK-\(index)") }
        let store = MemoryLocalStore()
        store.place(try JSONCoding.encoder.encode(copy), as: .favorites, of: Self.user.id)
        return store
    }

    /// An account whose feed begins with `count` favorites the device already has (their versions 1…count).
    static func account(startingWith count: Int) -> FakeAccount {
        let account = FakeAccount()
        for index in 0..<count { account.add("SK-\(index)") }
        return account
    }

    /// A heart, then its echo (the sync a live change wakes), with 5,000 favorites on the device: the queue is saved,
    /// one line is appended, the copy is not written.
    @Test func aHeartAndItsEchoDoNotRewriteTheCopy() async throws {
        let store = try Self.storeWithCopy(of: 5_000)
        let account = Self.account(startingWith: 5_000)
        let stub = StubServer { account.answer($0) ?? .problem(404, .notFound) }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        _ = try await app.restoreSession()
        try await app.favorite("SK-NEW", in: .rijksmuseum)
        let echo = try await app.syncFavorites()
        #expect(echo.changes.map(\.itemId) == ["SK-NEW"])
        #expect(store.writes[.favorites] == nil)
        #expect(store.appends[.journal] == 1, "\(store.appends) \(store.writes)")
        let line = try #require(store.read(.journal, of: Self.user.id))
        #expect(line.count < 1_000)
        // The relaunch sees the copy and the journal as one.
        let relaunched = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        _ = try await relaunched.restoreSession()
        #expect(await relaunched.hearts(in: .rijksmuseum).count == 5_001)
        #expect(await relaunched.outbox.syncedVersion == 5_001)
        #expect(await relaunched.pendingWrites().isEmpty)
        // A sync that brings nothing writes nothing.
        _ = try await relaunched.syncFavorites()
        #expect(store.appends[.journal] == 1 && store.writes[.favorites] == nil, "\(store.appends) \(store.writes)")
    }

    /// Once the journal is as large as the copy (and past 64 KiB), the next sync writes the copy and empties it.
    @Test func theJournalIsFoldedIntoTheCopyOnceItOutgrowsIt() async throws {
        let store = try Self.storeWithCopy(of: 10)
        let account = Self.account(startingWith: 10)
        let stub = StubServer { account.answer($0) ?? .problem(404, .notFound) }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        _ = try await app.restoreSession()
        var syncs = 0
        while store.writes[.favorites] == nil && syncs < 1_000 {
            account.add("SK-\(10 + syncs)")
            _ = try await app.syncFavorites()
            syncs += 1
        }
        #expect(store.writes[.favorites] == 1)
        #expect(syncs > 100)  // well past the first few syncs: each one appended its line until then
        #expect(store.read(.journal, of: Self.user.id) == nil)
        let relaunched = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        _ = try await relaunched.restoreSession()
        #expect(await relaunched.hearts(in: .rijksmuseum).count == 10 + syncs)
    }

    /// A crash in the middle of an append leaves half a line: it is left out, and the copy is saved whole at once so
    /// that no later line is appended after it. The next sync brings that change again.
    @Test func aLineCutOffByACrashIsLeftOut() async throws {
        let store = try Self.storeWithCopy(of: 3)
        let account = Self.account(startingWith: 3)
        account.add("SK-3")
        let whole = try JournalEntry(restart: false, changes: [], version: 3, folded: []).line()
        var torn = try JournalEntry(restart: false, changes: [], version: 4, folded: []).line()
        torn.removeLast(5)
        store.place(whole + torn, as: .journal, of: Self.user.id)
        let stub = StubServer { account.answer($0) ?? .problem(404, .notFound) }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        _ = try await app.restoreSession()
        #expect(await app.outbox.syncedVersion == 3)
        #expect(store.writes[.favorites] == 1 && store.read(.journal, of: Self.user.id) == nil)
        #expect(try await app.syncFavorites().changes.map(\.itemId) == ["SK-3"])
        #expect(await app.hearts(in: .rijksmuseum).count == 4)
    }

    /// A journal that cannot be read is set aside (kept, reported); the copy is as of its last compaction, and the
    /// next sync reads the feed from there.
    @Test func aDamagedJournalIsSetAsideAndTheFeedReadAgain() async throws {
        let store = try Self.storeWithCopy(of: 2)
        let account = Self.account(startingWith: 2)
        account.add("SK-2")
        let damaged = Data("{\"format\":2,\"changes\":[{\"version\":\n{}\n".utf8)
        store.place(damaged, as: .journal, of: Self.user.id)
        let stub = StubServer { account.answer($0) ?? .problem(404, .notFound) }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), local: store)
        let events = await app.localEvents()
        _ = try await app.restoreSession()
        let report = await LocalDataTests.first(events) { if case .setAside = $0 { true } else { false } }
        guard case .setAside(let document, _, _)? = report else {
            Issue.record("the damaged journal was not reported")
            return
        }
        #expect(document == .journal)
        #expect(store.setAsideDocuments.values.contains(damaged))
        #expect(try await app.syncFavorites().changes.map(\.itemId) == ["SK-2"])
        #expect(await app.hearts(in: .rijksmuseum) == ["SK-0", "SK-1", "SK-2"])
    }

    /// Replaying a journal on a copy that already has it changes nothing (a crash between writing the compacted copy
    /// and emptying the journal), a restart included.
    @Test func replayingTwiceChangesNothing() throws {
        var copy = FavoritesDocument()
        let entries = [
            JournalEntry(restart: true, changes: [], version: 0, folded: []),
            JournalEntry(restart: false, changes: [
                FavoriteChange(version: 1, kind: .added, experience: .rijksmuseum, itemId: "A", at: Date(timeIntervalSince1970: 1_700_000_000),
                               favorite: Fixture.favorite("A")),
                FavoriteChange(version: 2, kind: .added, experience: .rijksmuseum, itemId: "B", at: Date(timeIntervalSince1970: 1_700_000_000),
                               favorite: Fixture.favorite("B")),
            ], version: 2, folded: []),
            JournalEntry(restart: false, changes: [
                FavoriteChange(version: 3, kind: .removed, experience: .rijksmuseum, itemId: "A", at: Date(timeIntervalSince1970: 1_700_000_000)),
            ], version: 3, folded: [UUID()]),
        ]
        for entry in entries { copy.replay(entry) }
        var again = copy
        for entry in entries { again.replay(entry) }
        #expect(again == copy)
        #expect(copy.favorites["rijksmuseum"].map { Set($0.keys) } == ["B"] && copy.version == 3)
        let journal = try entries.map { try $0.line() }.reduce(Data(), +)
        #expect(try JournalEntry.entries(in: journal) == entries)
    }
}
