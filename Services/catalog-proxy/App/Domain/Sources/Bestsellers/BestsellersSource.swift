import Contracts
import Foundation

/// The NYT best sellers: the lists as categories, a list's current books, and a book's detail enriched from Google
/// Books by ISBN.
///
/// The NYT allows 5 calls a minute and 500 a day, and lists change weekly. Every list published on the current date
/// comes from one call, the full overview (`/lists/full-overview.json`); a list it does not carry (one no longer
/// published) from its own current list. The names, the overview and those lists are shared by every replica for
/// hours, and ``BestsellersRefresh`` fetches them again on a schedule before they expire, so a user's pick reads the
/// shared store and never spends the upstream's budget (``UpstreamSettings``, counted for all replicas together).
/// Google Books without a key shares a quota that is often spent: a book whose enrichment fails is served with the
/// list's facts (`enriched: false`).
struct BestsellersSource: CatalogSource {
    let experience = ExperienceID.bestsellers
    let upstreams = [UpstreamName.nytBooks, .googleBooks]
    /// Lists have 15 books, some 10 or 20.
    let maximumPageSize = 25
    let detailBuildsOnListedCopy = true

    /// How long the overview is kept for every replica: several refresh windows, so a user finds it while the
    /// scheduled refresh works, and one call serves everyone for hours when it does not.
    static let overviewLife: TimeInterval = 6 * 3600
    /// How long a list the overview does not carry is kept: those lists are no longer published.
    static let listLife: TimeInterval = 48 * 3600
    static let namesLife: TimeInterval = 24 * 3600
    /// How many of a book's ISBNs a detail asks Google Books about, until one matches.
    static let isbnsTried = 3

    /// The list names: the categories.
    static let namesRequest = UpstreamRequest(upstream: .nytBooks, path: "/svc/books/v3/lists/names.json",
                                              sharedFor: namesLife)
    /// Every list published on the current date, each with all its books.
    static let overviewRequest = UpstreamRequest(upstream: .nytBooks, path: "/svc/books/v3/lists/full-overview.json",
                                                 sharedFor: overviewLife)

    /// One list's current books (`list` has the shape ``NYTBooks/isListID(_:)`` checks).
    static func listRequest(_ list: String) -> UpstreamRequest {
        UpstreamRequest(upstream: .nytBooks, path: "/svc/books/v3/lists/current/\(list).json", sharedFor: listLife)
    }

    /// A book is known by its ISBN-13.
    func canonicalID(_ id: String) -> String? { ISBN.thirteen(id) }

    func isReachable(_ cursor: PageCursor) -> Bool {
        cursor.page == 0 && cursor.phase == 0 && cursor.token == nil && cursor.offset < 1000
            && cursor.pageSize <= maximumPageSize
    }

    func categories() -> SourceStep<[CatalogCategory]>? {
        .fetch(Self.namesRequest) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            return .done(try NYTBooks.categories(answer.body))
        }
    }

    /// A list's books in rank order, a page at a time: from the overview when it carries the list, else from the
    /// list's own current books (both come whole from the upstream, and are kept).
    func search(_ query: SearchQuery, at cursor: PageCursor) -> SourceStep<SearchResults> {
        guard let category = query.category, NYTBooks.isListID(category) else {
            return .failed(UpstreamFailure.notFound)
        }
        return .fetch(Self.overviewRequest) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            if let books = try NYTBooks.books(inOverview: answer.body, category: category, experience: experience) {
                return .done(page(of: books, at: cursor))
            }
            return .fetch(Self.listRequest(category)) { answer in
                // An unknown list is the API's 404; the proxy checks categories first, so this is a list that went
                // away.
                guard !answer.isNotFound else { return .done(SearchResults(entries: [], next: nil)) }
                let books = try NYTBooks.books(answer.body, category: category, experience: experience)
                return .done(page(of: books, at: cursor))
            }
        }
    }

    private func page(of books: [CatalogItem], at cursor: PageCursor) -> SearchResults {
        let page = books.dropFirst(cursor.offset).prefix(cursor.pageSize)
        let end = cursor.offset + page.count
        return SearchResults(entries: page.map(SearchEntry.item),
                             next: end < books.count ? PageCursor(pageSize: cursor.pageSize, offset: end) : nil)
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
