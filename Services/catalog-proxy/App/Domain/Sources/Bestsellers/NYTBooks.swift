import Contracts
import Foundation

/// Pure decoders of the NYT Books API: the list names (the best sellers' categories), the overview of every current
/// list, and a current list with its books. Every field is optional but a book's ISBN-13 (its id here): a book without
/// one is left out, not the list.
enum NYTBooks {
    /// `GET /svc/books/v3/lists/names.json`. Lists named only by `list_name` (the API's older shape) get the
    /// hyphenated id the API takes.
    static func categories(_ body: Data) throws -> [CatalogCategory] {
        let names = try Upstream.decode(Names.self, from: body, source: "NYT Books")
        guard let results = names.results else { throw SourceError.malformedBody("NYT Books names without results") }
        var seen = Set<String>()
        return results.elements.compactMap { list -> CatalogCategory? in
            guard let id = Upstream.clean(list.list_name_encoded) ?? list.list_name.flatMap(encodedName),
                  seen.insert(id).inserted
            else { return nil }
            return CatalogCategory(id: id, name: Upstream.clean(list.display_name ?? list.list_name) ?? id,
                                   updated: Upstream.clean(list.updated)?.lowercased())
        }
    }

    /// `Hardcover Fiction` → `hardcover-fiction`, as the API spells list names in its own answers.
    static func encodedName(_ name: String) -> String? {
        let words = name.lowercased().split { !$0.isLetter && !$0.isNumber }
        return words.isEmpty ? nil : words.joined(separator: "-")
    }

    /// A list id's shape: lower-case words joined by hyphens, as `list_name_encoded` is; anything else never reaches
    /// the upstream's path.
    static func isListID(_ text: String) -> Bool {
        text.utf8.count <= 80 && text.wholeMatch(of: #/[a-z0-9]+(-[a-z0-9]+)*/#) != nil
    }

    /// `GET /svc/books/v3/lists/current/{list}.json`: the books in rank order, each marked with the list asked for
    /// (the API may answer with another list's name: a recorded answer for `hardcover-fiction` names the combined
    /// print and e-book list).
    static func books(_ body: Data, category: String, experience: ExperienceID) throws -> [CatalogItem] {
        let list = try Upstream.decode(CurrentList.self, from: body, source: "NYT Books")
        guard let results = list.results else { throw SourceError.malformedBody("NYT Books list without results") }
        return (results.books?.elements ?? []).compactMap { book($0, category: category, experience: experience) }
            .sorted { ($0.book?.rank ?? .max) < ($1.book?.rank ?? .max) }
    }

    /// `GET /svc/books/v3/lists/full-overview.json`: every list published on the current date with its books. The
    /// books of list `category` in rank order, or nil when the overview does not carry that list (one no longer
    /// published).
    static func books(inOverview body: Data, category: String, experience: ExperienceID) throws -> [CatalogItem]? {
        guard let list = try overview(body).first(where: { $0.id == category }) else { return nil }
        return list.books.compactMap { book($0, category: category, experience: experience) }
            .sorted { ($0.book?.rank ?? .max) < ($1.book?.rank ?? .max) }
    }

    /// The ids of the lists an overview carries.
    static func listIDs(inOverview body: Data) throws -> Set<String> {
        Set(try overview(body).map(\.id))
    }

    /// The overview's lists, each named as the list names name it (`list_name_encoded`, else the hyphenated
    /// `list_name`).
    private static func overview(_ body: Data) throws -> [(id: String, books: [Book])] {
        let overview = try Upstream.decode(Overview.self, from: body, source: "NYT Books")
        guard let lists = overview.results?.lists else {
            throw SourceError.malformedBody("NYT Books overview without lists")
        }
        return lists.elements.compactMap { list in
            guard let id = Upstream.clean(list.list_name_encoded) ?? list.list_name.flatMap(encodedName) else {
                return nil
            }
            return (id, list.books?.elements ?? [])
        }
    }

    static func book(_ book: Book, category: String, experience: ExperienceID) -> CatalogItem? {
        let isbns = (book.isbns?.elements ?? []).compactMap { ISBN.thirteen($0.isbn13) }
        guard let id = ISBN.thirteen(book.primary_isbn13) ?? isbns.first else { return nil }
        let author = Upstream.clean(book.author) ?? Upstream.clean(book.contributor)
        return CatalogItem(
            id: id, experience: experience, title: Upstream.clean(book.title) ?? id, subtitle: author,
            imageURL: Upstream.secureURL(book.book_image),
            book: BookFacts(
                author: author, category: category, rank: book.rank?.integer, rankLastWeek: book.rank_last_week?.integer,
                weeksOnList: book.weeks_on_list?.integer, description: Upstream.clean(book.description),
                publisher: Upstream.clean(book.publisher), isbn13: id, isbn10: ISBN.ten(book.primary_isbn10),
                buyURL: Upstream.secureURL(book.amazon_product_url),
                isbns: Array(([id] + isbns).uniqued())
            )
        )
    }

    // The API's shapes; every field optional so that a missing one degrades the book, not the list.

    struct Names: Decodable {
        var results: LossyArray<ListName>?
        struct ListName: Decodable {
            var list_name: String?
            var display_name: String?
            var list_name_encoded: String?
            var updated: String?
        }
    }

    struct CurrentList: Decodable {
        var results: Results?
        struct Results: Decodable {
            var books: LossyArray<Book>?
        }
    }

    struct Overview: Decodable {
        var results: Results?
        struct Results: Decodable { var lists: LossyArray<List>? }
        struct List: Decodable {
            var list_name: String?
            var list_name_encoded: String?
            var books: LossyArray<Book>?
        }
    }

    struct Book: Decodable {
        var rank: LenientNumber?
        var rank_last_week: LenientNumber?
        var weeks_on_list: LenientNumber?
        var primary_isbn10: String?
        var primary_isbn13: String?
        var publisher: String?
        var description: String?
        var title: String?
        var author: String?
        var contributor: String?
        var book_image: String?
        var amazon_product_url: String?
        var isbns: LossyArray<ISBNs>?

        struct ISBNs: Decodable { var isbn13: String? }
    }
}

/// ISBNs as the sources write them.
enum ISBN {
    /// Thirteen digits (hyphens and spaces dropped) with a valid check digit; nil for anything else.
    static func thirteen(_ text: String?) -> String? {
        guard let text else { return nil }
        let digits = text.filter { $0 != "-" && $0 != " " }
        guard digits.count == 13, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        let values = digits.compactMap(\.wholeNumberValue)
        let sum = values.enumerated().reduce(0) { $0 + $1.element * ($1.offset.isMultiple(of: 2) ? 1 : 3) }
        return sum.isMultiple(of: 10) ? digits : nil
    }

    /// Ten characters (hyphens and spaces dropped), nine digits and a check digit or `X`, the check digit valid; nil
    /// for anything else (the NYT writes `"None"` for a book without one).
    static func ten(_ text: String?) -> String? {
        guard let text else { return nil }
        let characters = Array(text.filter { $0 != "-" && $0 != " " }.uppercased())
        guard characters.count == 10, characters.allSatisfy(\.isASCII) else { return nil }
        var sum = 0
        for (index, character) in characters.enumerated() {
            let value = index == 9 && character == "X" ? 10 : character.wholeNumberValue
            guard let value else { return nil }
            sum += value * (10 - index)
        }
        return sum.isMultiple(of: 11) ? String(characters) : nil
    }
}

extension Sequence where Element: Hashable {
    /// The elements in order, each once.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
