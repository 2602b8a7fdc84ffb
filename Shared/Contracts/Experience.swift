import Foundation

/// Which catalog a user browses. A string, not an enum, so a client built before a new experience existed can still
/// decode it; ``Experience/all`` lists the ones this version knows.
public struct ExperienceID: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let ticketmaster = ExperienceID(rawValue: "ticketmaster")
    public static let rijksmuseum = ExperienceID(rawValue: "rijksmuseum")
    public static let mobiles = ExperienceID(rawValue: "mobiles")
    public static let bestsellers = ExperienceID(rawValue: "bestsellers")
    public static let flashcards = ExperienceID(rawValue: "flashcards")
}

/// An experience as the app presents it (picker, navigation titles, search bar, sort menu, category picker). The app
/// draws its screens from this; nothing about an experience is hard-coded in a client.
public struct Experience: Codable, Sendable, Hashable, Identifiable {
    public var id: ExperienceID
    /// Shown in the experience picker.
    public var displayName: String
    /// Plural noun for navigation titles ("Events", "Artworks").
    public var itemNoun: String
    /// Placeholder for the search bar (or the list's title hint when the catalog has no search).
    public var searchHint: String
    /// Which optional block of ``CatalogItem`` the items carry.
    public var itemKind: ItemKind
    /// What the search text matches; nil when the catalog has no search.
    public var search: SearchCapability?
    /// Whether the catalog lists items without search text (within a category, where it has categories).
    public var browsable: Bool
    /// The catalog's categories (listed at `GET /v1/catalog/{experience}/categories`); nil when it has none.
    public var categories: CategoryCapability?
    /// The catalog's sort orders (`sort=`), the default first.
    public var sorts: [SortOption]
    /// The orders of the user's favorites list (`GET /v1/favorites?sort=`), the default first.
    public var favoriteSorts: [SortOption]
    /// Whether users write items of their own into their favorites (flash cards:
    /// `POST /v1/favorites/cards?experience=`).
    public var userWrittenItems: Bool

    public init(id: ExperienceID, displayName: String, itemNoun: String, searchHint: String, itemKind: ItemKind,
                search: SearchCapability?, browsable: Bool, categories: CategoryCapability? = nil,
                sorts: [SortOption], favoriteSorts: [SortOption], userWrittenItems: Bool = false) {
        self.id = id
        self.displayName = displayName
        self.itemNoun = itemNoun
        self.searchHint = searchHint
        self.itemKind = itemKind
        self.search = search
        self.browsable = browsable
        self.categories = categories
        self.sorts = sorts
        self.favoriteSorts = favoriteSorts
        self.userWrittenItems = userWrittenItems
    }

    /// Every experience this version of the backend serves, in picker order.
    public static let all: [Experience] = [
        Experience(id: .ticketmaster, displayName: "Ticketmaster", itemNoun: "Events",
                   searchHint: "Search events by city", itemKind: .event,
                   search: SearchCapability(matches: .city), browsable: false,
                   sorts: [.soonest], favoriteSorts: [.soonest, .recent, .oldest, .title, .priceLowToHigh]),
        Experience(id: .rijksmuseum, displayName: "Rijksmuseum", itemNoun: "Artworks",
                   searchHint: "Search artworks by name", itemKind: .artwork,
                   search: SearchCapability(matches: .name), browsable: true,
                   sorts: [SortOption(id: .relevance, name: "Best match")],
                   favoriteSorts: [.recent, .oldest, .title]),
        Experience(id: .mobiles, displayName: "Mobile Phones", itemNoun: "Phones",
                   searchHint: "Search phones by name or brand", itemKind: .phone,
                   search: SearchCapability(matches: .name), browsable: true,
                   sorts: [SortOption(id: .featured, name: "Featured"), .priceLowToHigh, .priceHighToLow, .ratingHighToLow],
                   favoriteSorts: [.recent, .priceLowToHigh, .priceHighToLow, .ratingHighToLow]),
        Experience(id: .bestsellers, displayName: "NYT Best Sellers", itemNoun: "Books",
                   searchHint: "Best sellers by list", itemKind: .book, search: nil, browsable: true,
                   categories: CategoryCapability(noun: "List", required: true),
                   sorts: [SortOption(id: .rank, name: "Rank")], favoriteSorts: [.recent, .oldest, .title]),
        Experience(id: .flashcards, displayName: "Flash Cards", itemNoun: "Cards",
                   searchHint: "Search cards by title", itemKind: .card,
                   search: SearchCapability(matches: .title), browsable: true,
                   sorts: [SortOption(id: .featured, name: "Featured")], favoriteSorts: [.recent, .oldest, .title],
                   userWrittenItems: true),
    ]

    /// The experience with this id, if this version knows it.
    public static func named(_ id: ExperienceID) -> Experience? { all.first { $0.id == id } }
}

/// Which facts an item carries: each kind has its optional block in ``CatalogItem``. A string, so a client built
/// before a new kind existed still decodes it.
public struct ItemKind: RawRepresentable, Codable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let event = ItemKind(rawValue: "event")
    public static let artwork = ItemKind(rawValue: "artwork")
    public static let phone = ItemKind(rawValue: "phone")
    public static let book = ItemKind(rawValue: "book")
    public static let card = ItemKind(rawValue: "card")
}

/// What an experience's search text means.
public struct SearchCapability: Codable, Sendable, Hashable {
    /// `city` (events in a city), `name` (a maker's or a work's name, a phone's name or brand), `title`.
    public var matches: SearchMatch

    public init(matches: SearchMatch) { self.matches = matches }
}

public struct SearchMatch: RawRepresentable, Codable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let city = SearchMatch(rawValue: "city")
    public static let name = SearchMatch(rawValue: "name")
    public static let title = SearchMatch(rawValue: "title")
}

/// An experience's categories.
public struct CategoryCapability: Codable, Sendable, Hashable {
    /// What a category is called in the app's picker ("List").
    public var noun: String
    /// Whether a list needs `category=` (the best sellers are listed per list).
    public var required: Bool

    public init(noun: String, required: Bool) {
        self.noun = noun
        self.required = required
    }
}

/// A sort order an experience offers, as `sort=` takes it and as the sort menu shows it.
public struct SortOption: Codable, Sendable, Hashable, Identifiable {
    public var id: ListSort
    public var name: String

    public init(id: ListSort, name: String) {
        self.id = id
        self.name = name
    }

    static let soonest = SortOption(id: .date, name: "Soonest first")
    static let recent = SortOption(id: .recent, name: "Recently added")
    static let oldest = SortOption(id: .oldest, name: "First added")
    static let title = SortOption(id: .title, name: "Title")
    static let priceLowToHigh = SortOption(id: .priceAscending, name: "Price (low to high)")
    static let priceHighToLow = SortOption(id: .priceDescending, name: "Price (high to low)")
    static let ratingHighToLow = SortOption(id: .ratingDescending, name: "Rating (5 to 1)")
}

public struct ListSort: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The source's own order (its best match first).
    public static let relevance = ListSort(rawValue: "relevance")
    /// The catalog's own order, as its source lists it.
    public static let featured = ListSort(rawValue: "featured")
    /// Soonest first.
    public static let date = ListSort(rawValue: "date")
    /// The list's rank, 1 first.
    public static let rank = ListSort(rawValue: "rank")
    /// Favorites: the most recently added first, the first added first, by title.
    public static let recent = ListSort(rawValue: "recent")
    public static let oldest = ListSort(rawValue: "oldest")
    public static let title = ListSort(rawValue: "title")
    public static let priceAscending = ListSort(rawValue: "price-asc")
    public static let priceDescending = ListSort(rawValue: "price-desc")
    public static let ratingDescending = ListSort(rawValue: "rating-desc")
}

/// One category of an experience (a NYT best-seller list).
public struct CatalogCategory: Codable, Sendable, Hashable, Identifiable {
    /// What `category=` takes (`hardcover-fiction`).
    public var id: String
    public var name: String
    /// How often the source updates it (`weekly`, `monthly`), when it says.
    public var updated: String?

    public init(id: String, name: String, updated: String?) {
        self.id = id
        self.name = name
        self.updated = updated
    }
}

/// The body of `GET /v1/catalog/{experience}/categories`.
public struct CategoryList: Codable, Sendable, Hashable {
    public var categories: [CatalogCategory]
    public init(categories: [CatalogCategory]) { self.categories = categories }
}

/// The body of `GET /v1/catalog/experiences`.
public struct ExperienceList: Codable, Sendable, Hashable {
    public var experiences: [Experience]
    public init(experiences: [Experience]) { self.experiences = experiences }
}
