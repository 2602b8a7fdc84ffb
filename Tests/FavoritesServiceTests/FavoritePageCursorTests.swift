import Contracts
import Foundation
import ServiceKit
@testable import FavoritesService
import Testing

/// The list cursor on its own: what it encodes, and which cursors it refuses.
@Suite struct FavoritePageCursorTests {
    /// A favorite as the view's columns keep it.
    static let favorite = FavoriteSnapshot(experience: "ticketmaster", itemId: "G5diZfkn0B-bh", title: "Phoenix Suns",
                                           price: 19.5)

    @Test(arguments: FavoriteSort.allCases)
    func aCursorReadsBackForItsOwnSortOnly(sort: FavoriteSort) throws {
        let cursor = FavoritePageCursor(after: Self.favorite, version: 7, sort: sort)
        let text = cursor.encoded
        #expect(FavoritePageCursor(text, sort: sort) == cursor)
        for other in FavoriteSort.allCases where other != sort {
            #expect(FavoritePageCursor(text, sort: other) == nil)
        }
    }

    @Test func itKeepsTheSortKeyOfTheLastItem() {
        #expect(FavoritePageCursor(after: Self.favorite, version: 7, sort: .recent).version == 7)
        #expect(FavoritePageCursor(after: Self.favorite, version: 7, sort: .title).title == "Phoenix Suns")
        #expect(FavoritePageCursor(after: Self.favorite, version: 7, sort: .price).price == 19.5)
        var unpriced = Self.favorite
        unpriced.price = nil
        let cursor = FavoritePageCursor(after: unpriced, version: 7, sort: .price)
        #expect(cursor.price == nil)
        #expect(FavoritePageCursor(cursor.encoded, sort: .price) == cursor)
        // An event's "when": date and time, the date alone, or none (undated events come last).
        var dated = Self.favorite
        dated.localDate = "2026-12-31"
        dated.localTime = "19:30:00"
        #expect(FavoritePageCursor(after: dated, version: 7, sort: .date).when == "2026-12-31T19:30:00")
        dated.localTime = nil
        #expect(FavoritePageCursor(after: dated, version: 7, sort: .date).when == "2026-12-31T")
        #expect(FavoritePageCursor(after: Self.favorite, version: 7, sort: .date).when == nil)
        #expect("2026-12-31T" < "2026-12-31T00:00:00")  // a day's undated-time event before its timed ones
    }

    @Test(arguments: ["", "not base64!", "e30", String(repeating: "A", count: 5000),
                      Data(#"{"sort":"recent","itemId":"x"}"#.utf8).base64EncodedString(),
                      // PostgreSQL text cannot hold a NUL: refused here, not a failed query.
                      Data(#"{"sort":"recent","version":3,"itemId":"a\u0000b"}"#.utf8).base64URLEncodedString()])
    func aForgedOrDamagedCursorIsRefused(text: String) {
        #expect(FavoritePageCursor(text, sort: .recent) == nil)
    }

    @Test func theLongestTitleStillMakesACursorThatReadsBack() throws {
        // Every scalar of the title and the id escaped in JSON: the longest cursor there can be.
        let title = FavoriteSnapshot.shortened(String(repeating: "\u{1}", count: 10_000))
        var favorite = Self.favorite
        favorite.title = title
        favorite.itemId = String(repeating: "\u{1}", count: 128)
        let cursor = FavoritePageCursor(after: favorite, version: 7, sort: .title)
        #expect(cursor.encoded.utf8.count <= FavoritePageCursor.maximumLength)
        #expect(FavoritePageCursor(cursor.encoded, sort: .title) == cursor)
        #expect(FavoritePageCursor(Data(#"{"sort":"title","title":"a\u0000","itemId":"b"}"#.utf8)
            .base64URLEncodedString(), sort: .title) == nil)
    }

    @Test func longTitlesAreShortenedBetweenCharacters() {
        #expect(FavoriteSnapshot.shortened("Phoenix Suns") == "Phoenix Suns")
        let exact = String(repeating: "a", count: FavoriteSnapshot.maximumTitleScalars)
        #expect(FavoriteSnapshot.shortened(exact) == exact)
        // A thumb with a skin tone is two scalars and one character: never cut in half.
        let thumbs = FavoriteSnapshot.shortened(String(repeating: "👍🏽", count: 400))
        #expect(thumbs.unicodeScalars.count <= FavoriteSnapshot.maximumTitleScalars)
        #expect(thumbs.hasSuffix("…"))
        #expect(thumbs.dropLast().allSatisfy { $0 == "👍🏽" })
        #expect(thumbs.count == (FavoriteSnapshot.maximumTitleScalars - 1) / 2 + 1)
    }
}
