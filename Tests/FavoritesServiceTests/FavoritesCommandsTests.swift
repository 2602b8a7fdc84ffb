@testable import FavoritesService
import Contracts
import Foundation
import Testing

/// The write rules, decided on a user's state without a database: room, titles, retries, and when nothing is written.
@Suite struct FavoritesCommandsTests {
    static let now = Date(timeIntervalSince1970: 1_795_367_280.123_456)
    static let radiohead = Favorite(experience: .ticketmaster, itemId: "G5diZfkn0B-bh", title: "Radiohead",
                                    subtitle: nil, imageURL: nil, price: 59.5, rating: nil,
                                    favoritedAt: Date(timeIntervalSince1970: 1_700_000_000.5))
    static let snapshot = FavoriteSnapshot(radiohead)

    static func state(item: Favorite? = nil, count: Int = 0, holder: WriteState.TitleHolder? = nil,
                      earlier: FavoriteEvent? = nil) -> WriteState {
        WriteState(version: 7, earlier: earlier.map { EarlierEvent(event: $0, recordedAt: now) }, item: item,
                   count: count, titleHolder: holder)
    }

    @Test func aNewFavoriteIsAddedWhileThereIsRoom() throws {
        let decision = try FavoritesCommands.favorite(Self.snapshot, in: Self.state(count: 4), maximum: 5,
                                                      isKeyed: false, at: Self.now)
        #expect(decision.event == .added(Self.snapshot))
        #expect(decision.outcome == .created(Favorite(Self.snapshot, favoritedAt: Self.now)))
        #expect(throws: FavoritesRefusal.limitReached(count: 5, experience: "ticketmaster")) {
            try FavoritesCommands.favorite(Self.snapshot, in: Self.state(count: 5), maximum: 5, isKeyed: false,
                                           at: Self.now)
        }
    }

    /// One kept already needs no room: it adds nothing, and answers 200 with the favorite as kept.
    @Test func aFavoriteOfAFavoriteWritesNothingUnlessKeyed() throws {
        let full = Self.state(item: Self.radiohead, count: 5)
        let plain = try FavoritesCommands.favorite(Self.snapshot, in: full, maximum: 5, isKeyed: false, at: Self.now)
        #expect(plain.event == nil && plain.outcome == .existing(Self.radiohead))
        let keyed = try FavoritesCommands.favorite(Self.snapshot, in: full, maximum: 5, isKeyed: true, at: Self.now)
        #expect(keyed.event == .confirmed(Self.snapshot, favoritedAt: Self.radiohead.favoritedAt))
        #expect(keyed.outcome == .existing(Self.radiohead))
    }

    /// A retry answers as the first request did, before any check (the limit is reached meanwhile, the item gone),
    /// and writes nothing again.
    @Test func aRetryGetsTheFirstAnswerAndWritesNothing() throws {
        let added = Self.state(count: 5, earlier: .added(Self.snapshot))
        let retried = try FavoritesCommands.favorite(Self.snapshot, in: added, maximum: 5, isKeyed: true, at: Date())
        #expect(retried.event == nil && retried.outcome == .created(Favorite(Self.snapshot, favoritedAt: Self.now)))
        let confirmed = Self.state(earlier: .confirmed(Self.snapshot, favoritedAt: Self.radiohead.favoritedAt))
        let again = try FavoritesCommands.favorite(Self.snapshot, in: confirmed, maximum: 5, isKeyed: true, at: Date())
        #expect(again.event == nil
            && again.outcome == .existing(Favorite(Self.snapshot, favoritedAt: Self.radiohead.favoritedAt)))
    }

    @Test func aTitleIsKeptOnceWhereUsersWriteItems() throws {
        let card = FavoriteSnapshot(card: try Card.checked(CardDraft(title: "Ciao", facts: ["hi", "bye"])).get(),
                                    experience: .flashcards, itemId: "own-1")
        let taken = Self.state(count: 1, holder: .init(itemId: "own-0", title: "ciao "))
        #expect(throws: FavoritesRefusal.titleTaken(by: "ciao ")) {
            try FavoritesCommands.writeCard(card, in: taken, maximum: 5, at: Self.now)
        }
        // The item holding the title is the one being favorited again: nothing is taken.
        let own = Self.state(item: Favorite(card, favoritedAt: Self.now), count: 1,
                             holder: .init(itemId: "own-1", title: "Ciao"))
        #expect(try FavoritesCommands.favorite(card, in: own, maximum: 5, isKeyed: false, at: Self.now).event == nil)
        let written = try FavoritesCommands.writeCard(card, in: Self.state(count: 4), maximum: 5, at: Self.now)
        #expect(written.event == .cardWritten(card) && written.outcome == Favorite(card, favoritedAt: Self.now))
        #expect(throws: FavoritesRefusal.limitReached(count: 5, experience: "flashcards")) {
            try FavoritesCommands.writeCard(card, in: Self.state(count: 5), maximum: 5, at: Self.now)
        }
    }

    /// Nothing to remove writes nothing, unless keyed (the event is how its retry is recognised); a retry never
    /// writes again, even when there is something to remove now.
    @Test func removalsWriteWhatRemovesSomethingOrAKey() {
        let experience = ExperienceID.ticketmaster
        let id = Self.radiohead.itemId
        #expect(FavoritesCommands.unfavorite(id, of: experience, in: Self.state(), isKeyed: false) == nil)
        #expect(FavoritesCommands.unfavorite(id, of: experience, in: Self.state(), isKeyed: true)
            == .removed(experience: experience, itemId: id))
        #expect(FavoritesCommands.unfavorite(id, of: experience, in: Self.state(item: Self.radiohead), isKeyed: false)
            == .removed(experience: experience, itemId: id))
        let retry = Self.state(item: Self.radiohead, count: 1, earlier: .removed(experience: experience, itemId: id))
        #expect(FavoritesCommands.unfavorite(id, of: experience, in: retry, isKeyed: true) == nil)
        #expect(FavoritesCommands.clear(experience, in: Self.state(), isKeyed: false) == nil)
        #expect(FavoritesCommands.clear(experience, in: Self.state(count: 2), isKeyed: false)
            == .cleared(experience: experience))
        #expect(FavoritesCommands.clear(experience, in: Self.state(), isKeyed: true) == .cleared(experience: experience))
        #expect(FavoritesCommands.clear(experience, in: retry, isKeyed: true) == nil)
    }
}
