@testable import EventStore
@testable import FavoritesService
import Contracts
import Foundation
import Testing

/// How the projections read the log: what they apply, skip, or refuse to skip.
@Suite struct FavoriteEventTests {
    static func recorded(type: String, schemaVersion: Int = 1, data: String) -> RecordedEvent {
        RecordedEvent(position: 7, streamID: "user-\(UUID().uuidString.lowercased())", version: 1, id: UUID(),
                      type: type, schemaVersion: schemaVersion, data: data, metadata: EventMetadata(),
                      recordedAt: Date(), transactionID: 1)
    }

    @Test func anEventOfItsOwnIsApplied() throws {
        let event = try FavoriteEvent(Self.recorded(type: FavoriteEvent.clearedType, data: #"{"experience":"ticketmaster"}"#))
        #expect(event == .cleared(experience: ExperienceID(rawValue: "ticketmaster")))
    }

    @Test func aTypeItDoesNotKeepIsSkipped() throws {
        #expect(try FavoriteEvent(Self.recorded(type: "profile-changed", data: "{}")) == nil)
    }

    /// A newer release's version of one of its own types (a rolling deploy): the batch must fail, so that the event
    /// waits for a replica that can read it instead of being skipped for good.
    @Test(arguments: [(2, #"{"experience":"ticketmaster"}"#), (1, #"{"nothing":"useful"}"#)])
    func anEventOfItsOwnThatItCannotReadStopsTheBatch(schemaVersion: Int, data: String) {
        #expect(throws: FavoriteEvent.Unreadable.self) {
            try FavoriteEvent(Self.recorded(type: FavoriteEvent.clearedType, schemaVersion: schemaVersion, data: data))
        }
    }

    /// Favorites recorded before event times were kept read with none; newer ones keep them through the log.
    @Test func anAddedEventReadsWithOrWithoutTheEventTime() throws {
        let older = #"{"experience":"ticketmaster","itemId":"G5diZfkn0B-bh","title":"Radiohead","price":59.5}"#
        guard case .added(let snapshot) = try FavoriteEvent(Self.recorded(type: FavoriteEvent.addedType, data: older))
        else { Issue.record("not read as an added event"); return }
        #expect(snapshot.localDate == nil && snapshot.localTime == nil)
        #expect(snapshot.price == 59.5)

        var timed = snapshot
        timed.localDate = "2016-07-27"
        timed.localTime = "19:30:00"
        let stored = String(decoding: try EventStore.encoder.encode(timed), as: UTF8.self)
        #expect(try FavoriteEvent(Self.recorded(type: FavoriteEvent.addedType, data: stored)) == .added(timed))
    }

    /// A keyed favorite of a favorite keeps its answer whole, `favoritedAt` to the microsecond, through the log.
    @Test func aConfirmedFavoriteReadsBackToTheMicrosecond() throws {
        let current = FavoriteSnapshot(item: CatalogItem(id: "G5diZfkn0B-bh", experience: .ticketmaster, title: "Radiohead"))
        let kept = FavoriteEvent.confirmed(current, favoritedAt: Date(timeIntervalSince1970: 1_795_367_280.123_456),
                                           version: 4)
        let stored = String(decoding: try EventStore.encoder.encode(kept.payload), as: UTF8.self)
        #expect(try FavoriteEvent(Self.recorded(type: FavoriteEvent.confirmedType, data: stored)) == kept)
        // One recorded before confirmations kept the favorite's version reads with none.
        let older = stored.replacingOccurrences(of: #","version":4"#, with: "")
        #expect(older != stored)
        #expect(try FavoriteEvent(Self.recorded(type: FavoriteEvent.confirmedType, data: older))
            == .confirmed(current, favoritedAt: Date(timeIntervalSince1970: 1_795_367_280.123_456), version: nil))
    }

    /// A card the user wrote says so in its item, and so does one recorded before items said it (read so, by the
    /// projections and by the changes feed, in place, as the view's rows were migrated).
    @Test func aWrittenCardSaysSoInItsItem() throws {
        let card = Card(title: "Heap", facts: ["A tree.", "Its root is the least."])
        let snapshot = FavoriteSnapshot(card: card, experience: .flashcards, itemId: "own-1")
        #expect(snapshot.item?.card == CardFacts(facts: card.facts, writtenByUser: true))
        let earlier = #"{"experience":"flashcards","itemId":"own-1","title":"Heap","facts":["A tree.","Its root is the least."],"written":true,"item":{"card":{"facts":["A tree.","Its root is the least."]},"experience":"flashcards","id":"own-1","title":"Heap"}}"#
        let recorded = Self.recorded(type: FavoriteEvent.cardWrittenType, data: earlier)
        guard case .cardWritten(let read)? = try FavoriteEvent(recorded) else {
            Issue.record("the card was not read")
            return
        }
        #expect(read.item == snapshot.item)
        let change = try #require(StoredChange(recorded))
        #expect(change.favorite?.item
            == #"{"card":{"facts":["A tree.","Its root is the least."],"writtenByUser":true},"experience":"flashcards","id":"own-1","title":"Heap"}"#)
        #expect(change.favorite?.version == 1 && change.change.favorite == nil)
        // A favorite saved before items were kept at all, rebuilt from its fields.
        var fields = snapshot
        fields.item = nil
        #expect(fields.cellItem.card?.writtenByUser == true)
    }

    /// A favorite recorded before the cell item was kept reads as one with its item rebuilt from what it kept; one
    /// recorded with it (an event's start, a date) reads back as written.
    @Test func anEarlierFavoriteGetsItsItemRebuiltAndANewOneKeepsItsOwn() throws {
        let earlier = #"{"experience":"mobiles","itemId":"1","title":"Galaxy","subtitle":"Samsung","price":499,"rating":4.5}"#
        guard case .added(let snapshot)? = try FavoriteEvent(Self.recorded(type: FavoriteEvent.addedType, data: earlier))
        else {
            Issue.record("an earlier favorite was not read")
            return
        }
        let rebuilt = Favorite(snapshot, favoritedAt: Date(), version: 1).item
        #expect(rebuilt.id == "1" && rebuilt.title == "Galaxy" && rebuilt.subtitle == "Samsung")
        #expect(rebuilt.phone?.price == 499 && rebuilt.phone?.rating == 4.5 && rebuilt.phone?.description == nil)

        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let item = CatalogItem(id: "G5diZfkn0B-bh", experience: .ticketmaster, title: "Suns", event: EventFacts(
            localDate: "2027-01-15", localTime: "19:00:00", startsAt: start, timeZone: "America/Phoenix", dateTBA: false,
            dateTBD: false, timeTBA: false, noSpecificTime: false, status: "onsale", venue: nil,
            priceRanges: [.init(type: "standard", currency: "USD", min: 20, max: 90)], ticketURL: nil, info: nil))
        let data = String(decoding: try EventStore.encoder.encode(FavoriteSnapshot(item: item)), as: UTF8.self)
        guard case .added(let kept)? = try FavoriteEvent(Self.recorded(type: FavoriteEvent.addedType, data: data)) else {
            Issue.record("a favorite with its item was not read")
            return
        }
        #expect(Favorite(kept, favoritedAt: Date(), version: 1).item == item)
        #expect(kept.price == 20 && kept.localDate == "2027-01-15")
    }

    /// An artwork favorited before the catalog sized the museum's Google-hosted pictures: its event keeps `=s0` (the
    /// log says what the catalog answered then), and every reader of the log gets the picture at a cell's size.
    @Test func aPictureRecordedAtItsOriginalSizeIsReadAtACellsSize() throws {
        let base = "https://lh3.googleusercontent.com/01vnwH71IfMYDsosPltpROvWfEDyTwTi13PokHuzEUi_Qwk7-2Xs7ZLW0taA4qfDX"
        let data = """
            {"experience":"rijksmuseum","itemId":"RP-P-OB-79.025","title":"Aansporing","imageURL":"\(base)=s0",
             "item":{"id":"RP-P-OB-79.025","experience":"rijksmuseum","title":"Aansporing","imageURL":"\(base)=s0",
                     "artwork":{"productionPlaces":[]}}}
            """
        let recorded = Self.recorded(type: FavoriteEvent.addedType, data: data)
        guard case .added(let snapshot)? = try FavoriteEvent(recorded) else {
            Issue.record("the favorite was not read")
            return
        }
        #expect(snapshot.imageURL == base + "=s400" && snapshot.item?.imageURL == base + "=s400")
        #expect(recorded.data.contains("=s0"))  // the log keeps what the catalog answered then
        let favorite = Favorite(snapshot, favoritedAt: Date(), version: 1)
        #expect(favorite.item.imageURL == base + "=s400")
        let change = try #require(FavoriteChange(recorded))
        #expect(change.favorite?.item.imageURL == base + "=s400")
        // A picture of another host is as the catalog gave it.
        let picture = "https://s1.ticketm.net/dam/a/1/x_RETINA_PORTRAIT_16_9.jpg"
        let event = FavoriteSnapshot(item: CatalogItem(id: "G5diZfkn0B-bh", experience: .ticketmaster, title: "Suns",
                                                       imageURL: picture))
        #expect(Favorite(event, favoritedAt: Date(), version: 1).item.imageURL == picture)
    }
}
