@testable import FavoritesService
import AsyncHTTPClient
import Contracts
import CoreMetrics
import EventStore
import Foundation
import Logging
import Postgres
import ServiceKit
import TestSupport
import Testing

/// The write rules, as each write's one statement decides them under the stream's lock (FavoritesWriteStatements),
/// on a real PostgreSQL: room, titles, retries, and when nothing is written.
@Suite struct FavoritesCommandsTests {
    /// The commands on one database, a user's stream and its events.
    struct Commands: Sendable {
        let pool: DatabasePool
        let writer: FavoritesWriter
        let recent = RecentItems(lifetime: .seconds(600))
        let maximum = 3

        func favorite(_ itemId: String, in experience: ExperienceID = .rijksmuseum, by request: WriteRequest)
            async throws -> Favorited
        {
            if recent.item(itemId, in: experience) == nil {
                recent.remember(try .init(FavoriteSnapshot(item: CatalogItem(id: itemId, experience: experience,
                                                                              title: "Painting \(itemId)"))))
            }
            let favorite = FavoriteItem(
                writer: writer, catalog: CatalogPeer(baseURL: "http://127.0.0.1:9", httpClient: .shared),
                recent: recent, maximumFavorites: maximum)
            return try await favorite(itemId, in: try #require(Experience.named(experience)), by: request,
                                      call: .init(bearer: "", logger: Logger(label: "commands"))).favorited
        }

        func card(_ title: String, by request: WriteRequest) async throws -> Favorite {
            let card = try Card.checked(CardDraft(title: title, facts: ["one", "two"])).get()
            return try await WriteCard(writer: writer, maximumFavorites: maximum)(
                card, in: try #require(Experience.named(.flashcards)), by: request)
        }

        func events(of user: UUID) async throws -> [String] {
            try await EventStore.read(FavoritesStore.stream(of: user), pool: pool).map(\.type)
        }
    }

    static func withCommands(_ body: (Commands) async throws -> Void) async throws {
        let migrator = Migrator(schema: "favorites", migrations: FavoritesMigrations.all)
        try await withTestPool(migrators: [migrator], size: 2, searchPath: "favorites") { pool, _ in
            let writer = FavoritesWriter(store: FavoritesStore(pool: pool), commits: GroupCommit(pool: pool, leaders: 1),
                                         notifier: EventNotifier(pool: pool, channel: "unheard",
                                                                 logger: Logger(label: "notifier")),
                                         metrics: NOOPMetricsHandler.instance)
            try await body(Commands(pool: pool, writer: writer))
        }
    }

    static func plain(_ user: UUID) -> WriteRequest {
        WriteRequest(user: user, eventID: nil, id: UUID(), requestID: "commands")
    }

    static func keyed(_ user: UUID) -> WriteRequest {
        let id = UUID()
        return WriteRequest(user: user, eventID: id, id: id, requestID: "commands")
    }

    /// The limit is counted only once the stream is long enough to have reached it; then the write is decided again,
    /// counted. One kept already needs no room.
    @Test func aNewFavoriteNeedsRoomEvenInALongStream() async throws {
        try await Self.withCommands { commands in
            let user = UUID()
            for item in ["a", "b", "c"] { _ = try await commands.favorite(item, by: Self.plain(user)) }
            try await UnfavoriteItem(writer: commands.writer)("c", in: .rijksmuseum, by: Self.plain(user))
            // Four events, two favorites: counted, there is room.
            for item in ["b", "e"] { _ = try await commands.favorite(item, by: Self.plain(user)) }
            await #expect(throws: FavoritesRefusal.limitReached(count: 3, experience: "rijksmuseum")) {
                try await commands.favorite("f", by: Self.plain(user))
            }
            let again = try await commands.favorite("a", by: Self.plain(user))
            guard case .existing(let kept) = again else { Issue.record("\(again)"); return }
            #expect(kept.item.id == "a" && kept.version == 1)
            // Other experiences have room of their own.
            _ = try await commands.favorite("g", in: .ticketmaster, by: Self.plain(user))
            #expect(try await commands.events(of: user).count == 6)
        }
    }

    /// A favorite of a favorite writes nothing, unless keyed: then its answer is recorded for its retry.
    @Test func aFavoriteOfAFavoriteWritesNothingUnlessKeyed() async throws {
        try await Self.withCommands { commands in
            let user = UUID()
            let created = try await commands.favorite("a", by: Self.plain(user))
            guard case .created(let first) = created else { Issue.record("\(created)"); return }
            #expect(try await commands.favorite("a", by: Self.plain(user)) == .existing(first))
            #expect(try await commands.favorite("a", by: Self.keyed(user)) == .existing(first))
            #expect(try await commands.events(of: user) == [FavoriteEvent.addedType, FavoriteEvent.confirmedType])
        }
    }

    /// A retry answers as the first request did, whatever happened since (the item removed, the limit reached), and
    /// writes nothing again.
    @Test func aRetryGetsTheFirstAnswerAndWritesNothing() async throws {
        try await Self.withCommands { commands in
            let user = UUID()
            let request = Self.keyed(user)
            let first = try await commands.favorite("a", by: request)
            try await UnfavoriteItem(writer: commands.writer)("a", in: .rijksmuseum, by: Self.plain(user))
            for item in ["b", "c", "d"] { _ = try await commands.favorite(item, by: Self.plain(user)) }
            #expect(try await commands.favorite("a", by: request) == first)
            let card = Self.keyed(user)
            let written = try await commands.card("Owl", by: card)
            #expect(try await commands.card("Owl", by: card) == written)
            #expect(try await commands.events(of: user).count == 6)
        }
    }

    /// Where users write items, a title is kept once, without case or surrounding spaces.
    @Test func aTitleIsKeptOnceWhereUsersWriteItems() async throws {
        try await Self.withCommands { commands in
            let user = UUID()
            _ = try await commands.card("Ciao", by: Self.plain(user))
            await #expect(throws: FavoritesRefusal.titleTaken(by: "Ciao")) {
                try await commands.card("ciao", by: Self.plain(user))
            }
            _ = try await commands.card("Ciao", by: Self.plain(UUID()))  // another user's cards are theirs
            #expect(try await commands.events(of: user) == [FavoriteEvent.cardWrittenType])
        }
    }

    /// Nothing to remove writes nothing, unless keyed (the event is how its retry is recognised); a retry never
    /// removes again, even what was favorited since.
    @Test func removalsWriteWhatRemovesSomethingOrAKey() async throws {
        try await Self.withCommands { commands in
            let user = UUID()
            let unfavorite = UnfavoriteItem(writer: commands.writer)
            let clear = ClearFavorites(writer: commands.writer)
            try await unfavorite("a", in: .rijksmuseum, by: Self.plain(user))
            try await clear(.rijksmuseum, by: Self.plain(user))
            #expect(try await commands.events(of: user).isEmpty)
            let removal = Self.keyed(user)
            try await unfavorite("a", in: .rijksmuseum, by: removal)
            let clearing = Self.keyed(user)
            try await clear(.rijksmuseum, by: clearing)
            _ = try await commands.favorite("a", by: Self.plain(user))
            try await unfavorite("a", in: .rijksmuseum, by: removal)
            try await clear(.rijksmuseum, by: clearing)
            #expect(try await commands.events(of: user) == [FavoriteEvent.removedType, FavoriteEvent.clearedType,
                                                            FavoriteEvent.addedType])
            try await clear(.rijksmuseum, by: Self.plain(user))
            #expect(try await commands.events(of: user).last == FavoriteEvent.clearedType)
            #expect(try await commands.pool.query("SELECT count(*) FROM favorites").scalar(Int.self) == 0)
        }
    }
}
