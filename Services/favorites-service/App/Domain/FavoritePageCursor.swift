import Contracts
import Foundation

/// How a favorites list is ordered. Items without the value sorted on come last.
enum FavoriteSort: String, CaseIterable, Codable, Sendable {
    /// Most recently favorited first (by the stream version that added each one).
    case recent
    case oldest
    /// By title, case-insensitively.
    case title
    /// Lowest price first (`price-asc`; `price` is its earlier name).
    case price
    case priceDescending = "price-desc"
    case ratingDescending = "rating-desc"
    /// Soonest first, by an event's local date and time (an item without a date comes last).
    case date

    /// The sort `sort=` names: an experience's own (``Experience/favoriteSorts``), or `price`, the earlier name of
    /// `price-asc`, where that is offered.
    init?(_ text: String, offered: [ListSort]) {
        let sort = ListSort(rawValue: text == "price" ? ListSort.priceAscending.rawValue : text)
        guard offered.contains(sort) else { return nil }
        switch sort {
        case .recent: self = .recent
        case .oldest: self = .oldest
        case .title: self = .title
        case .priceAscending: self = .price
        case .priceDescending: self = .priceDescending
        case .ratingDescending: self = .ratingDescending
        case .date: self = .date
        default: return nil
        }
    }
}

/// Where the next page of a favorites list starts: the sort key of the last item served, not an offset, so that a
/// favorite added or removed meanwhile never makes the next page skip or repeat an item.
///
/// Opaque to clients (base64url of JSON); it names its sort, so a cursor is refused with any other.
struct FavoritePageCursor: Codable, Equatable, Sendable {
    var sort: FavoriteSort
    /// `recent` and `oldest`: the version of the event that added the last item.
    var version: Int64?
    /// `title`: the last item's title.
    var title: String?
    /// `price`, `price-desc`: the last item's price; `rating-desc`: its rating (`nil`: the list had reached the items
    /// without one).
    var price: Double?
    var rating: Double?
    /// `date`: the last item's "when" (``FavoriteSnapshot/when``; `nil`: the list had reached the items without a
    /// date).
    var when: String?
    /// The last item's id: the tie-breaker.
    var itemId: String

    /// The cursor after `favorite` (as the view's columns keep it) in `sort` order.
    init(after favorite: FavoriteSnapshot, version: Int64, sort: FavoriteSort) {
        self.sort = sort
        self.itemId = favorite.itemId
        switch sort {
        case .recent, .oldest: self.version = version
        case .title: self.title = favorite.title
        case .price, .priceDescending: self.price = favorite.price
        case .ratingDescending: self.rating = favorite.rating
        case .date: self.when = favorite.when
        }
    }

    /// The position before the first item.
    static func start(_ sort: FavoriteSort) -> FavoritePageCursor {
        switch sort {
        case .recent: FavoritePageCursor(sort: sort, version: .max, itemId: "")
        case .oldest: FavoritePageCursor(sort: sort, version: 0, itemId: "")
        case .title: FavoritePageCursor(sort: sort, title: "", itemId: "")
        case .price: FavoritePageCursor(sort: sort, price: -.infinity, itemId: "")
        case .priceDescending: FavoritePageCursor(sort: sort, price: .infinity, itemId: "")
        case .ratingDescending: FavoritePageCursor(sort: sort, rating: .infinity, itemId: "")
        // Before any date: "" sorts before every date in the store's byte order.
        case .date: FavoritePageCursor(sort: sort, when: "", itemId: "")
        }
    }

    private init(sort: FavoriteSort, version: Int64? = nil, title: String? = nil, price: Double? = nil,
                 rating: Double? = nil, when: String? = nil, itemId: String) {
        self.sort = sort
        self.version = version
        self.title = title
        self.price = price
        self.rating = rating
        self.when = when
        self.itemId = itemId
    }

    var encoded: String {
        // Encoding a struct of strings and numbers cannot fail; an infinity is never encoded (it only starts a list).
        (try? JSONEncoder().encode(self))?.base64URLEncodedString() ?? ""
    }

    /// The longest cursor this API makes: a title of ``FavoriteSnapshot/maximumTitleScalars`` and an item id of 128
    /// bytes, every one of them escaped in JSON (6 bytes), in base64 (4 bytes for 3), with room for the rest.
    static let maximumLength = 4096

    /// The cursor in `text`, if this API made it for `sort`.
    init?(_ text: String, sort: FavoriteSort) {
        guard text.utf8.count <= Self.maximumLength, let data = Data(base64URLEncoded: text),
              let cursor = try? JSONDecoder().decode(Self.self, from: data), cursor.sort == sort,
              // PostgreSQL text cannot hold a NUL, and no cursor this API made has one.
              !cursor.itemId.contains("\0"), cursor.title?.contains("\0") != true, cursor.when?.contains("\0") != true
        else { return nil }
        switch sort {
        case .recent, .oldest: guard cursor.version != nil else { return nil }
        case .title: guard cursor.title != nil else { return nil }
        case .price, .priceDescending, .ratingDescending, .date: break
        }
        self = cursor
    }
}

extension FavoriteSnapshot {
    /// When an event takes place, as its list sorts it: `<local date>T<local time>` (ISO 8601, so text order is time
    /// order), the date alone when the time is unknown; nil without a date.
    var when: String? { localDate.map { "\($0)T\(localTime ?? "")" } }
}
