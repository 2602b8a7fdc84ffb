import Contracts
import Foundation

/// A favorite as the view keeps it: its fields (``favorite``, without its item) and its item's JSON as stored, which
/// an answer carries as it is, never decoded and encoded again (a list of five would otherwise parse and print five
/// ~1 KB copies on every read).
struct StoredFavorite: Sendable, Equatable {
    /// Every field but `item` (nil).
    var favorite: Favorite
    /// The item's JSON text, as written (`favorites.item`).
    var item: String
}

/// A page of the list as stored (see ``StoredFavorite``): what `FavoritePage` holds, the items kept as stored.
struct StoredFavoritePage: Sendable, Equatable {
    var items: [StoredFavorite]
    var nextCursor: String?
    var version: Int64
}
