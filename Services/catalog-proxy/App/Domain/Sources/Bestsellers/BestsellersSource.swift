import Contracts
import Foundation

/// The NYT best sellers: the lists as categories, a list's current books, and a book's detail enriched from Google
/// Books by ISBN.
///
/// The NYT allows 5 calls a minute and 500 a day, and lists change weekly: the names and each list are shared by
/// every replica for hours (``listLife``), so a burst of users opening a list costs at most one call, and the
/// upstream's budget (``UpstreamSettings``) is counted for all replicas together. Google Books without a key shares a
/// quota that is often spent: a book whose enrichment fails is served with the list's facts (`enriched: false`).
struct BestsellersSource: CatalogSource {
    let experience = ExperienceID.bestsellers
    let upstreams = [UpstreamName.nytBooks, .googleBooks]
    /// Lists have 15 books, some 10 or 20.
    let maximumPageSize = 25
    let detailBuildsOnListedCopy = true

    /// How long the list names and a list's books are kept for every replica.
    static let listLife: TimeInterval = 6 * 3600
    static let namesLife: TimeInterval = 24 * 3600
    /// How many of a book's ISBNs a detail asks Google Books about, until one matches.
    static let isbnsTried = 3

    /// A book is known by its ISBN-13.
    func canonicalID(_ id: String) -> String? { ISBN.thirteen(id) }

    func isReachable(_ cursor: PageCursor) -> Bool {
        cursor.page == 0 && cursor.phase == 0 && cursor.token == nil && cursor.offset < 1000
            && cursor.pageSize <= maximumPageSize
    }

    func categories() -> SourceStep<[CatalogCategory]>? {
        .fetch(UpstreamRequest(upstream: .nytBooks, path: "/svc/books/v3/lists/names.json", sharedFor: Self.namesLife)) {
            answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            return .done(try NYTBooks.categories(answer.body))
        }
    }

    /// A list's books in rank order, a page at a time (the list comes whole from the upstream, and is kept).
    func search(_ query: SearchQuery, at cursor: PageCursor) -> SourceStep<SearchResults> {
        guard let category = query.category, NYTBooks.isListID(category) else {
            return .failed(UpstreamFailure.notFound)
        }
        let request = UpstreamRequest(upstream: .nytBooks, path: "/svc/books/v3/lists/current/\(category).json",
                                      sharedFor: Self.listLife)
        return .fetch(request) { answer in
            // An unknown list is the API's 404; the proxy checks categories first, so this is a list that went away.
            guard !answer.isNotFound else { return .done(SearchResults(entries: [], next: nil)) }
            let books = try NYTBooks.books(answer.body, category: category, experience: experience)
            let page = books.dropFirst(cursor.offset).prefix(cursor.pageSize)
            let end = cursor.offset + page.count
            return .done(SearchResults(
                entries: page.map(SearchEntry.item),
                next: end < books.count ? PageCursor(pageSize: cursor.pageSize, offset: end) : nil
            ))
        }
    }

    /// Google Books by ISBN, over the listed copy: the book's editions are asked about in turn until one matches.
    func detail(id: String, known: CatalogItem?) -> SourceStep<DetailResult> {
        let candidates = Array(((known?.book?.isbns ?? []) + [id]).uniqued().prefix(Self.isbnsTried))
        return enrich(known, id: id, asking: candidates[...], lastFailure: nil)
    }

    private func enrich(_ known: CatalogItem?, id: String, asking isbns: ArraySlice<String>,
                        lastFailure: UpstreamFailure?) -> SourceStep<DetailResult> {
        guard let isbn = isbns.first else {
            if var known {
                known.book?.enriched = false
                return .done(lastFailure == nil ? .item(known) : .incomplete(known))
            }
            return lastFailure.map { .failed($0) } ?? .done(.notFound)
        }
        let request = UpstreamRequest(upstream: .googleBooks, path: "/books/v1/volumes",
                                      query: [.init(name: "q", value: "isbn:\(isbn)")], tolerant: true)
        return .fetch(request) { answer in
            if let failure = answer.failure {
                // Google is unavailable (its quota spent, most often): the list's facts, without asking further.
                return enrich(known, id: id, asking: [], lastFailure: failure)
            }
            guard !answer.isNotFound, let volume = try GoogleBooks.volume(answer.body, isbn: isbn) else {
                return enrich(known, id: id, asking: isbns.dropFirst(), lastFailure: nil)
            }
            var item = GoogleBooks.enrich(known, with: volume, isbn: isbn, experience: experience)
            item.id = id
            return .done(.item(item))
        }
    }
}
