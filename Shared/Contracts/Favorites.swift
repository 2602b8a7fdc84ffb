import Foundation

/// One favorite, with the snapshot of the item taken when it was favorited: enough to draw the cell of the Favorites
/// tab without asking the catalog.
///
/// `item` is that snapshot in the catalog's own shape (``CatalogItem``, as a list cell shows it: list-sized image, the
/// kind's facts), so an app draws a favorite with the same cell as a catalog item. The flat fields beside it are the
/// ones lists sort and filter on, kept for clients written before `item`.
public struct Favorite: Codable, Sendable, Hashable, Identifiable {
    public var experience: ExperienceID
    public var itemId: String
    public var title: String
    public var subtitle: String?
    public var imageURL: String?
    /// The lowest price the source listed, when it lists prices (sortable).
    public var price: Double?
    /// The source's rating, when it has one (sortable).
    public var rating: Double?
    /// Events: the day at the venue (`yyyy-MM-dd`) and the time there (`HH:mm:ss`, absent when not announced), as the
    /// catalog gave them, so the Favorites tab can show when an event is without asking the catalog.
    public var localDate: String?
    public var localTime: String?
    /// Books: the rank on the list it was saved from.
    public var rank: Int?
    /// Cards: the facts on the back.
    public var facts: [String]?
    /// A card the user wrote (not saved from the catalog); absent (false) otherwise.
    public var writtenByUser: Bool?
    public var favoritedAt: Date
    /// The item as the catalog served it for a list cell when it was favorited (for favorites saved before the
    /// server kept it, what the flat fields say, in the same shape). Always sent by the server; optional here so that
    /// an answer from an older server still decodes.
    public var item: CatalogItem?

    public init(experience: ExperienceID, itemId: String, title: String, subtitle: String?, imageURL: String?,
                price: Double?, rating: Double?, localDate: String? = nil, localTime: String? = nil, rank: Int? = nil,
                facts: [String]? = nil, writtenByUser: Bool? = nil, favoritedAt: Date, item: CatalogItem? = nil) {
        self.experience = experience
        self.itemId = itemId
        self.title = title
        self.subtitle = subtitle
        self.imageURL = imageURL
        self.price = price
        self.rating = rating
        self.localDate = localDate
        self.localTime = localTime
        self.rank = rank
        self.facts = facts
        self.writtenByUser = writtenByUser
        self.favoritedAt = favoritedAt
        self.item = item
    }
}

extension Favorite {
    /// The item's id: unique within an experience, like ``CatalogItem/id`` (a list shows one experience).
    public var id: String { itemId }
}

/// `POST /v1/favorites/cards?experience=`: a card the user writes, kept among their favorites.
public struct CardDraft: Codable, Sendable, Hashable {
    public var title: String
    /// At least two.
    public var facts: [String]

    public init(title: String, facts: [String]) {
        self.title = title
        self.facts = facts
    }

    /// The bounds a card is held to (the server's, so a client can check before sending). Lengths are characters as
    /// a person sees them, and UTF-8 bytes as sent (four per character, enough for any script), checked first.
    public static let maximumTitleLength = 200
    public static let maximumTitleBytes = 800
    public static let minimumFacts = 2
    public static let maximumFacts = 10
    public static let maximumFactLength = 1000
    public static let maximumFactBytes = 4000
}

/// `GET /v1/favorites?experience=`: one page of the user's favorites.
public struct FavoritePage: Codable, Sendable, Hashable {
    public var items: [Favorite]
    public var nextCursor: String?
    /// The user's stream version this page was read at (also the `ETag`).
    public var version: Int64

    public init(items: [Favorite], nextCursor: String?, version: Int64) {
        self.items = items
        self.nextCursor = nextCursor
        self.version = version
    }
}

/// `GET /v1/favorites/ids?experience=`: which items to draw with a filled heart.
public struct FavoriteIDs: Codable, Sendable, Hashable {
    public var experience: ExperienceID
    public var itemIds: [String]
    public var version: Int64

    public init(experience: ExperienceID, itemIds: [String], version: Int64) {
        self.experience = experience
        self.itemIds = itemIds
        self.version = version
    }
}

/// One change to the user's favorites, for incremental sync across devices.
public struct FavoriteChange: Codable, Sendable, Hashable, Identifiable {
    public enum Kind: String, Codable, Sendable { case added, removed, cleared }

    public var version: Int64
    public var kind: Kind
    public var experience: ExperienceID
    /// Absent for `cleared`.
    public var itemId: String?
    public var at: Date
    /// `added` only: the favorite as it was added, so another device can draw it without reading the list again.
    public var favorite: Favorite?

    public init(version: Int64, kind: Kind, experience: ExperienceID, itemId: String?, at: Date,
                favorite: Favorite? = nil) {
        self.version = version
        self.kind = kind
        self.experience = experience
        self.itemId = itemId
        self.at = at
        self.favorite = favorite
    }
}

extension FavoriteChange {
    /// Its position in the user's changes feed: unique per user.
    public var id: Int64 { version }
}

/// `GET /v1/favorites/changes?since=N`.
public struct FavoriteChanges: Codable, Sendable, Hashable {
    public var changes: [FavoriteChange]
    /// The stream version after the last change listed; pass it as `since` next time.
    public var version: Int64
    /// More changes follow; ask again with `since=version`.
    public var hasMore: Bool

    public init(changes: [FavoriteChange], version: Int64, hasMore: Bool) {
        self.changes = changes
        self.version = version
        self.hasMore = hasMore
    }
}

/// One of the most favorited items of an experience.
public struct PopularItem: Codable, Sendable, Hashable, Identifiable {
    public var itemId: String
    public var title: String
    public var subtitle: String?
    public var imageURL: String?
    /// How many users have it among their favorites.
    public var favoriteCount: Int

    public init(itemId: String, title: String, subtitle: String?, imageURL: String?, favoriteCount: Int) {
        self.itemId = itemId
        self.title = title
        self.subtitle = subtitle
        self.imageURL = imageURL
        self.favoriteCount = favoriteCount
    }
}

extension PopularItem {
    public var id: String { itemId }
}

/// `GET /v1/favorites/popular?experience=`: the most favorited items, most first. Kept by an async projection, so
/// it may trail the latest favorites by a moment.
public struct PopularItems: Codable, Sendable, Hashable {
    public var experience: ExperienceID
    public var items: [PopularItem]

    public init(experience: ExperienceID, items: [PopularItem]) {
        self.experience = experience
        self.items = items
    }
}
