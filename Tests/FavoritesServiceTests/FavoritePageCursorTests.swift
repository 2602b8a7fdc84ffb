import Contracts
import Foundation
@testable import FavoritesService
import Testing

/// The list cursor on its own: what it encodes, and which cursors it refuses.
@Suite struct FavoritePageCursorTests {
    static let favorite = Favorite(experience: ExperienceID(rawValue: "ticketmaster"), itemId: "G5diZfkn0B-bh", title: "Phoenix Suns",
                                   subtitle: nil, imageURL: nil, price: 19.5, rating: nil,
                                   favoritedAt: Date(timeIntervalSince1970: 0))

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
    }

    @Test(arguments: ["", "not base64!", "e30", String(repeating: "A", count: 2000),
                      Data(#"{"sort":"recent","itemId":"x"}"#.utf8).base64EncodedString()])
    func aForgedOrDamagedCursorIsRefused(text: String) {
        #expect(FavoritePageCursor(text, sort: .recent) == nil)
    }
}
