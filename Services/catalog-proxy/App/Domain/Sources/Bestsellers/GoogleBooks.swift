import Contracts
import Foundation

/// Pure decoder of Google Books' volume search (`GET /books/v1/volumes?q=isbn:…`), and what a book's detail takes
/// from it.
enum GoogleBooks {
    /// What a volume adds to a listed book.
    struct Volume: Sendable, Equatable {
        var title: String?
        var authors: [String]
        var publisher: String?
        var publishedDate: String?
        var description: String?
        var pageCount: Int?
        var coverURL: String?
    }

    /// The volume whose identifiers include `isbn` (13 or 10 digits), or nil: an ISBN query can answer another
    /// edition, several volumes, or none (then the body has no `items` at all).
    static func volume(_ body: Data, isbn: String) throws -> Volume? {
        let answer = try Upstream.decode(Answer.self, from: body, source: "Google Books")
        guard answer.kind == "books#volumes" else { throw SourceError.malformedBody("Google Books sent no volumes") }
        let match = (answer.items?.elements ?? []).first { item in
            (item.volumeInfo?.industryIdentifiers?.elements ?? []).contains { $0.identifier == isbn }
        }
        guard let info = match?.volumeInfo else { return nil }
        return Volume(
            title: Upstream.clean(info.title), authors: (info.authors?.elements ?? []).compactMap(Upstream.clean),
            publisher: Upstream.clean(info.publisher), publishedDate: Upstream.date(info.publishedDate),
            description: info.description.map(plainText).flatMap(Upstream.clean),
            pageCount: info.pageCount?.integer.flatMap { $0 > 0 ? $0 : nil },
            coverURL: cover(info.imageLinks?.thumbnail ?? info.imageLinks?.smallThumbnail)
        )
    }

    /// Google's cover links are http and carry the page-curl effect: https, without it.
    static func cover(_ link: String?) -> String? {
        guard let url = Upstream.secureURL(link), var components = URLComponents(string: url) else { return nil }
        components.queryItems = components.queryItems?.filter { $0.name != "edge" }
        return components.string
    }

    /// Descriptions may carry HTML: tags dropped, the common entities read.
    static func plainText(_ html: String) -> String {
        var text = html.replacingOccurrences(of: "<br>", with: "\n").replacingOccurrences(of: "<p>", with: "\n")
        text = text.replacingOccurrences(of: #"<[^>]{0,200}>"#, with: "", options: .regularExpression)
        for (entity, character) in [("&amp;", "&"), ("&quot;", "\""), ("&#39;", "'"), ("&lt;", "<"), ("&gt;", ">")] {
            text = text.replacingOccurrences(of: entity, with: character)
        }
        return text
    }

    /// A listed book with what Google Books knows of it; the list's facts win where both have one, except the
    /// description (Google's is the publisher's full text, the list's one line).
    static func enrich(_ book: CatalogItem?, with volume: Volume, isbn: String, experience: ExperienceID) -> CatalogItem {
        let author = book?.book?.author ?? (volume.authors.isEmpty ? nil : volume.authors.joined(separator: ", "))
        var facts = book?.book ?? BookFacts(author: author, category: nil, rank: nil, rankLastWeek: nil,
                                            weeksOnList: nil, description: nil, publisher: nil, isbn13: isbn,
                                            isbn10: nil, buyURL: nil)
        facts.description = volume.description ?? facts.description
        facts.publisher = facts.publisher ?? volume.publisher
        facts.pageCount = volume.pageCount
        facts.publishedDate = volume.publishedDate
        facts.enriched = true
        return CatalogItem(
            id: book?.id ?? isbn, experience: experience, title: book?.title ?? volume.title ?? isbn,
            subtitle: author, imageURL: book?.imageURL ?? volume.coverURL, book: facts
        )
    }

    struct Answer: Decodable {
        var kind: String?
        var items: LossyArray<Item>?
        struct Item: Decodable { var volumeInfo: Info? }
        struct Info: Decodable {
            var title: String?
            var authors: LossyArray<String>?
            var publisher: String?
            var publishedDate: String?
            var description: String?
            var pageCount: LenientNumber?
            var industryIdentifiers: LossyArray<Identifier>?
            var imageLinks: Links?
        }
        struct Identifier: Decodable { var identifier: String? }
        struct Links: Decodable {
            var smallThumbnail: String?
            var thumbnail: String?
        }
    }
}
