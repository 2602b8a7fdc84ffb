import Contracts
import Foundation

/// How items and favorites of each kind are drawn: the common columns (id, title, subtitle) and one or two of the
/// kind's own (an event's date, a phone's price and rating, a book's rank, a card's number of facts).
enum ItemViews {
    /// The kind of an experience's items: as this version knows it, else from the facts the item carries.
    static func kind(of experience: ExperienceID, sample: CatalogItem? = nil) -> ItemKind? {
        if let known = Experience.named(experience)?.itemKind { return known }
        guard let sample else { return nil }
        if sample.event != nil { return .event }
        if sample.artwork != nil { return .artwork }
        if sample.phone != nil { return .phone }
        if sample.book != nil { return .book }
        if sample.card != nil { return .card }
        return nil
    }

    static func kindColumns(_ kind: ItemKind?) -> [Table.Column] {
        switch kind {
        case .event?: [Table.Column(title: "WHEN", maxWidth: 16)]
        case .artwork?: [Table.Column(title: "DATING", maxWidth: 24)]
        case .phone?: [Table.Column(title: "PRICE", maxWidth: 10), Table.Column(title: "RATING", maxWidth: 6)]
        case .book?: [Table.Column(title: "RANK", maxWidth: 4), Table.Column(title: "WEEKS", maxWidth: 5)]
        case .card?: [Table.Column(title: "FACTS", maxWidth: 5)]
        default: []
        }
    }

    /// Search results, a ♥ before each favorite.
    static func table(_ items: [CatalogItem], kind: ItemKind?, hearts: Set<String>) -> String {
        var table = Table([Table.Column(title: "", maxWidth: 1), Table.Column(title: "ID", maxWidth: 24),
                           Table.Column(title: "TITLE", maxWidth: 48), Table.Column(title: "SUBTITLE", maxWidth: 32)]
                          + kindColumns(kind))
        for item in items {
            table.add([hearts.contains(item.id) ? "♥" : "", item.id, item.title, item.subtitle ?? ""]
                      + kindCells(item, kind: kind))
        }
        return table.render()
    }

    static func kindCells(_ item: CatalogItem, kind: ItemKind?) -> [String] {
        switch kind {
        case .event?: [Format.localWhen(date: item.event?.localDate, time: item.event?.localTime)]
        case .artwork?: [item.artwork?.dating ?? ""]
        case .phone?: [Format.number(item.phone?.price), Format.number(item.phone?.rating)]
        case .book?: [item.book?.rank.map(String.init) ?? "", item.book?.weeksOnList.map(String.init) ?? ""]
        case .card?: [item.card.map { String($0.facts.count) } ?? ""]
        default: []
        }
    }

    /// The favorites list, each drawn as its item is in search results, with when it was added.
    static func table(_ favorites: [Favorite], kind: ItemKind?) -> String {
        var table = Table([Table.Column(title: "ID", maxWidth: 24), Table.Column(title: "TITLE", maxWidth: 48),
                           Table.Column(title: "SUBTITLE", maxWidth: 32)]
                          + kindColumns(kind) + [Table.Column(title: "ADDED", maxWidth: 10)])
        for favorite in favorites {
            let item = favorite.item
            table.add([item.id, item.title, item.subtitle ?? ""] + kindCells(item, kind: kind)
                      + [Format.date(favorite.favoritedAt)])
        }
        return table.render()
    }

    /// One item's detail: everything the catalog said about it.
    static func detail(_ item: CatalogItem, isFavorite: Bool) -> String {
        var fields = Fields()
        fields.add("title", item.title + (isFavorite ? "  ♥" : ""))
        fields.add("subtitle", item.subtitle)
        fields.add("id", item.id)
        fields.add("experience", item.experience.rawValue)
        fields.add("image", item.imageURL)
        if let event = item.event { add(event, to: &fields) }
        if let artwork = item.artwork { add(artwork, to: &fields) }
        if let phone = item.phone { add(phone, to: &fields) }
        if let book = item.book { add(book, to: &fields) }
        if let card = item.card {
            fields.add("facts", card.facts.map { "• " + $0 }.joined(separator: "\n"))
        }
        return fields.render()
    }

    private static func add(_ event: EventFacts, to fields: inout Fields) {
        var when = Format.localWhen(date: event.localDate, time: event.localTime)
        let pending = [(event.dateTBA, "date TBA"), (event.dateTBD, "date TBD"), (event.timeTBA, "time TBA"),
                       (event.noSpecificTime, "no set time")].filter(\.0).map(\.1)
        if !pending.isEmpty { when += (when.isEmpty ? "" : " ") + "(" + pending.joined(separator: ", ") + ")" }
        fields.add("when", when)
        fields.add("time zone", event.timeZone)
        fields.add("status", event.status)
        if let venue = event.venue {
            fields.add("venue", ([venue.name] + [venue.city, venue.stateCode, venue.countryCode].compactMap { $0 })
                .joined(separator: ", "))
        }
        fields.add("prices", event.priceRanges?.map { range in
            let amount = range.min == range.max ? Format.number(range.min)
                : "\(Format.number(range.min))–\(Format.number(range.max))"
            return [range.type, amount, range.currency].compactMap { $0 }.joined(separator: " ")
        }.joined(separator: "\n"))
        fields.add("tickets", event.ticketURL)
        fields.add("info", event.info)
    }

    private static func add(_ artwork: ArtworkFacts, to fields: inout Fields) {
        fields.add("maker", artwork.maker)
        fields.add("dating", artwork.dating)
        fields.add("made in", artwork.productionPlaces.joined(separator: ", "))
        fields.add("web page", artwork.webPage)
        fields.add("description", artwork.plaqueDescription)
    }

    private static func add(_ phone: PhoneFacts, to fields: inout Fields) {
        fields.add("brand", phone.brand)
        fields.add("price", phone.price.map { Format.number($0) })
        fields.add("rating", phone.rating.map { Format.number($0) + " / 5" })
        fields.add("images", phone.images.map { String($0.count) })
        fields.add("description", phone.description)
    }

    private static func add(_ book: BookFacts, to fields: inout Fields) {
        fields.add("author", book.author)
        fields.add("list", book.category)
        fields.add("rank", book.rank.map { rank in
            let last = book.rankLastWeek.map { $0 == 0 ? " (new)" : " (last week \($0))" } ?? ""
            return "\(rank)\(last)"
        })
        fields.add("weeks on list", book.weeksOnList.map(String.init))
        fields.add("publisher", book.publisher)
        fields.add("published", book.publishedDate)
        fields.add("pages", book.pageCount.map(String.init))
        fields.add("ISBN-13", book.isbn13)
        fields.add("buy", book.buyURL)
        fields.add("description", book.description)
    }
}
