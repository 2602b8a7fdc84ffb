import Foundation

/// One item of any catalog, in the one shape every experience serves: the list cell needs `title`, `subtitle` and
/// `imageURL`; the source's typed facts come in one optional block per kind of item (`event`, `artwork`, `phone`,
/// `book`, `card`: the experience's `itemKind` says which). A field the upstream did not provide is absent, never
/// invented.
public struct CatalogItem: Codable, Sendable, Hashable, Identifiable {
    /// The source's own id (a Ticketmaster event id, a Rijksmuseum object number, a phone's number, a book's
    /// ISBN-13, a card's id).
    public var id: String
    public var experience: ExperienceID
    public var title: String
    public var subtitle: String?
    public var imageURL: String?
    public var event: EventFacts?
    public var artwork: ArtworkFacts?
    public var phone: PhoneFacts?
    public var book: BookFacts?
    public var card: CardFacts?

    public init(id: String, experience: ExperienceID, title: String, subtitle: String? = nil, imageURL: String? = nil,
                event: EventFacts? = nil, artwork: ArtworkFacts? = nil, phone: PhoneFacts? = nil,
                book: BookFacts? = nil, card: CardFacts? = nil) {
        self.id = id
        self.experience = experience
        self.title = title
        self.subtitle = subtitle
        self.imageURL = imageURL
        self.event = event
        self.artwork = artwork
        self.phone = phone
        self.book = book
        self.card = card
    }
}

/// What a mobile phone adds.
public struct PhoneFacts: Codable, Sendable, Hashable {
    /// As the source says (it has errors of its own: passed through, not corrected).
    public var brand: String?
    public var description: String?
    public var price: Double?
    /// 0 to 5.
    public var rating: Double?
    /// Detail only: the phone's pictures, in the source's order.
    public var images: [String]?

    public init(brand: String?, description: String?, price: Double?, rating: Double?, images: [String]? = nil) {
        self.brand = brand
        self.description = description
        self.price = price
        self.rating = rating
        self.images = images
    }
}

/// What a best-selling book adds: the list's facts, and in a detail what Google Books knows of the ISBN.
public struct BookFacts: Codable, Sendable, Hashable {
    public var author: String?
    /// The list it was listed in (`hardcover-fiction`), and its rank there (1 first).
    public var category: String?
    public var rank: Int?
    /// 0 when new on the list.
    public var rankLastWeek: Int?
    /// Weeks on the list; 0 when new (monthly lists).
    public var weeksOnList: Int?
    public var description: String?
    public var publisher: String?
    public var isbn13: String?
    public var isbn10: String?
    /// The ISBN-13 of every edition the list names, `isbn13` first.
    public var isbns: [String]?
    /// Where to buy it.
    public var buyURL: String?
    /// Detail only, from Google Books: the number of pages and the publication date (`YYYY`, `YYYY-MM` or
    /// `YYYY-MM-DD`).
    public var pageCount: Int?
    public var publishedDate: String?
    /// Detail only: whether Google Books answered for this detail (false when it could not be asked, so the detail
    /// holds the list's facts only).
    public var enriched: Bool?

    public init(author: String?, category: String?, rank: Int?, rankLastWeek: Int?, weeksOnList: Int?,
                description: String?, publisher: String?, isbn13: String?, isbn10: String?, buyURL: String?,
                isbns: [String]? = nil, pageCount: Int? = nil, publishedDate: String? = nil, enriched: Bool? = nil) {
        self.author = author
        self.category = category
        self.rank = rank
        self.rankLastWeek = rankLastWeek
        self.weeksOnList = weeksOnList
        self.description = description
        self.publisher = publisher
        self.isbn13 = isbn13
        self.isbn10 = isbn10
        self.isbns = isbns
        self.buyURL = buyURL
        self.pageCount = pageCount
        self.publishedDate = publishedDate
        self.enriched = enriched
    }
}

/// What a flash card adds: the facts on its back.
public struct CardFacts: Codable, Sendable, Hashable {
    public var facts: [String]
    /// A card the user wrote (`POST /v1/favorites/cards`), found only among their favorites; absent (false) for the
    /// catalog's cards.
    public var writtenByUser: Bool?

    public init(facts: [String], writtenByUser: Bool? = nil) {
        self.facts = facts
        self.writtenByUser = writtenByUser
    }
}

/// What an event adds (Ticketmaster).
public struct EventFacts: Codable, Sendable, Hashable {
    /// The day at the venue, `yyyy-MM-dd`.
    public var localDate: String?
    /// The time at the venue, `HH:mm:ss`; absent when the time is not announced.
    public var localTime: String?
    /// The start as an instant, when the source gives one.
    public var startsAt: Date?
    /// IANA time zone of the venue (`America/Chicago`).
    public var timeZone: String?
    /// The date is to be announced / to be determined; the time is to be announced; the event has no set time.
    public var dateTBA: Bool
    public var dateTBD: Bool
    public var timeTBA: Bool
    public var noSpecificTime: Bool
    /// `onsale`, `offsale`, `cancelled`, `rescheduled`, … as the source says.
    public var status: String?
    public var venue: Venue?
    /// Detail only. Absent when the source has no prices for the event.
    public var priceRanges: [PriceRange]?
    /// Detail only: where to buy tickets.
    public var ticketURL: String?
    /// Detail only: the source's notes about the event.
    public var info: String?

    public init(localDate: String?, localTime: String?, startsAt: Date?, timeZone: String?, dateTBA: Bool,
                dateTBD: Bool, timeTBA: Bool, noSpecificTime: Bool, status: String?, venue: Venue?,
                priceRanges: [PriceRange]?, ticketURL: String?, info: String?) {
        self.localDate = localDate
        self.localTime = localTime
        self.startsAt = startsAt
        self.timeZone = timeZone
        self.dateTBA = dateTBA
        self.dateTBD = dateTBD
        self.timeTBA = timeTBA
        self.noSpecificTime = noSpecificTime
        self.status = status
        self.venue = venue
        self.priceRanges = priceRanges
        self.ticketURL = ticketURL
        self.info = info
    }

    public struct Venue: Codable, Sendable, Hashable {
        public var name: String
        public var city: String?
        public var stateCode: String?
        public var countryCode: String?

        public init(name: String, city: String?, stateCode: String?, countryCode: String?) {
            self.name = name
            self.city = city
            self.stateCode = stateCode
            self.countryCode = countryCode
        }
    }

    public struct PriceRange: Codable, Sendable, Hashable {
        public var type: String?
        public var currency: String?
        public var min: Double?
        public var max: Double?

        public init(type: String?, currency: String?, min: Double?, max: Double?) {
            self.type = type
            self.currency = currency
            self.min = min
            self.max = max
        }
    }
}

/// What an artwork adds (Rijksmuseum).
public struct ArtworkFacts: Codable, Sendable, Hashable {
    public var maker: String?
    /// Detail only: the museum's text about the object, paragraphs separated by line breaks: its English plaque, else
    /// its English description, else the Dutch ones (``plaqueLanguage`` says which).
    public var plaqueDescription: String?
    /// Detail only, with ``plaqueDescription``: its language, `en` or `nl`.
    public var plaqueLanguage: String?
    /// When it was made, as the museum writes it (`1642`, `c. 1628 - c. 1629`).
    public var dating: String?
    /// A sortable year for `dating`.
    public var year: Int?
    /// Where it was made, without duplicates.
    public var productionPlaces: [String]
    /// The museum's web page of the object.
    public var webPage: String?

    public init(maker: String?, plaqueDescription: String?, plaqueLanguage: String? = nil, dating: String?, year: Int?,
                productionPlaces: [String], webPage: String? = nil) {
        self.maker = maker
        self.plaqueDescription = plaqueDescription
        self.plaqueLanguage = plaqueLanguage
        self.dating = dating
        self.year = year
        self.productionPlaces = productionPlaces
        self.webPage = webPage
    }
}

/// `GET /v1/catalog/{experience}/items?q=`: one page of results.
public struct CatalogPage: Codable, Sendable, Hashable {
    public var items: [CatalogItem]
    /// Pass as `cursor` for the next page; absent on the last page the source lets us reach.
    public var nextCursor: String?
    /// Some of the page's items could not be fetched from the catalog in time and are left out; asking for the same
    /// page again may bring them. Absent (false) from servers that predate it.
    public var partial: Bool

    public init(items: [CatalogItem], nextCursor: String?, partial: Bool = false) {
        self.items = items
        self.nextCursor = nextCursor
        self.partial = partial
    }

    enum CodingKeys: String, CodingKey { case items, nextCursor, partial }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        items = try container.decode([CatalogItem].self, forKey: .items)
        nextCursor = try container.decodeIfPresent(String.self, forKey: .nextCursor)
        partial = try container.decodeIfPresent(Bool.self, forKey: .partial) ?? false
    }
}
