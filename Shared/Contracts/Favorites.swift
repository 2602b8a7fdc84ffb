import Foundation

/// One favorite: the item as it was when favorited, when that was, and its place in the user's log. Nothing else, so
/// nothing is said twice.
///
/// `item` is the snapshot in the catalog's own shape (``CatalogItem``, as a list cell shows it: list-sized image, the
/// kind's facts), taken when the item was favorited and never refreshed: an app draws a favorite with the same cell as
/// a catalog item, without asking the catalog. A card the user wrote is an item too (its ``CardFacts/writtenByUser``
/// says so).
public struct Favorite: Codable, Sendable, Hashable, Identifiable {
    public var item: CatalogItem
    public var favoritedAt: Date
    /// The version of the event that added it in the user's stream (the `version` of its `added` change in the
    /// changes feed): an item favorited again after being removed gets a higher one.
    public var version: Int64

    public init(item: CatalogItem, favoritedAt: Date, version: Int64) {
        self.item = item
        self.favoritedAt = favoritedAt
        self.version = version
    }

    /// The item's identity: its id is unique within its experience only (like ``CatalogItem/id``).
    public struct ID: Hashable, Sendable {
        public var experience: ExperienceID
        public var itemId: String

        public init(experience: ExperienceID, itemId: String) {
            self.experience = experience
            self.itemId = itemId
        }
    }

    public var id: ID { ID(experience: item.experience, itemId: item.id) }
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
