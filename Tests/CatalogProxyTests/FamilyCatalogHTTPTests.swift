@testable import CatalogProxy
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
@testable import ReplayUpstream
import TestSupport
import Testing

/// The family's experiences through real HTTP: the phones and cards from the proxy's own copy, the best sellers from
/// the NYT (replayed) with Google Books details, and the NYT's budget shared by replicas.
@Suite(.serialized) struct FamilyCatalogHTTPTests {
    static func nytCalls(_ api: CatalogHarness) -> [String] {
        api.replay.requestLog.map(\.path).filter { $0.hasPrefix("/svc/books/") }
    }

    @Test func everyExperienceDescribesItself() async throws {
        try await CatalogHarness.withCatalog { api in
            let list = try await api.get("/v1/catalog/experiences", token: .some(nil)).decode(ExperienceList.self)
            #expect(list.experiences.map(\.id) == [.ticketmaster, .rijksmuseum, .mobiles, .bestsellers, .flashcards])
            let mobiles = try #require(list.experiences.first { $0.id == .mobiles })
            #expect(mobiles.browsable)
            #expect(mobiles.sorts.map(\.id) == [.featured, .priceAscending, .priceDescending, .ratingDescending])
            let books = try #require(list.experiences.first { $0.id == .bestsellers })
            #expect(books.search == nil)
            #expect(books.categories?.required == true)
            #expect(list.experiences.first { $0.id == .ticketmaster }?.browsable == false)
        }
    }

    @Test func phonesAreBrowsedSortedThreeWaysSearchedAndOpenedFromTheLoadedCopy() async throws {
        try await CatalogHarness.withCatalog(loadDatasets: true) { api in
            func page(_ query: String) async throws -> [CatalogItem] {
                try await api.get("/v1/catalog/mobiles/items\(query)").decode(CatalogPage.self).items
            }
            let featured = try await page("")
            #expect(featured.count == 5)
            let byPrice = try await page("?sort=price-asc").compactMap(\.phone?.price)
            #expect(byPrice == byPrice.sorted() && byPrice.count == 5)
            #expect(try await page("?sort=price-desc").compactMap(\.phone?.price) == byPrice.reversed())
            let ratings = try await page("?sort=rating-desc").compactMap(\.phone?.rating)
            #expect(ratings == ratings.sorted(by: >) && ratings.count == 5)
            #expect(featured.allSatisfy { $0.phone?.images == nil })  // list cells carry no picture list

            let nokia = try await page("?q=NOKIA")
            #expect(!nokia.isEmpty && nokia.allSatisfy { $0.title.localizedCaseInsensitiveContains("nokia") })
            #expect(try await page("?q=%25").isEmpty)  // `%` matches only itself

            let detail = try await api.get("/v1/catalog/mobiles/items/1").decode(CatalogItem.self)
            #expect((detail.phone?.images?.count ?? 0) >= 3)
            #expect(try await api.get("/v1/catalog/mobiles/items/99").status == .notFound)
            #expect(api.upstreamCalls == 0)  // served from PostgreSQL

            let paged = try await api.get("/v1/catalog/mobiles/items?limit=2&sort=price-asc").decode(CatalogPage.self)
            let next = try #require(paged.nextCursor)
            let rest = try await api.get("/v1/catalog/mobiles/items?cursor=\(next)&sort=price-asc").decode(CatalogPage.self)
            #expect(rest.items.compactMap(\.phone?.price) == Array(byPrice.dropFirst(2).prefix(2)))
            // The cursor continues its own search: with another sort, or none, it is refused, not a page of another.
            for other in ["sort=price-desc", "sort=rating-desc", "q=apple"] {
                let refused = try await api.get("/v1/catalog/mobiles/items?cursor=\(next)&\(other)")
                #expect(refused.status == .badRequest, "\(other)")
                #expect(refused.problem?.errors?.map(\.field) == ["cursor"], "\(other)")
            }
        }
    }

    @Test func whatAnExperienceDoesNotTakeIsA400NamingTheField() async throws {
        try await CatalogHarness.withCatalog(loadDatasets: true) { api in
            let cases: [(String, String)] = [
                ("/v1/catalog/mobiles/items?sort=cheapest", "sort"),
                ("/v1/catalog/mobiles/items?category=phones", "category"),
                ("/v1/catalog/ticketmaster/items", "q"),
                ("/v1/catalog/bestsellers/items", "category"),
                ("/v1/catalog/bestsellers/items?category=hardcover-fiction&q=gaga", "q"),
                ("/v1/catalog/bestsellers/items?category=no-such-list", "category"),
                ("/v1/catalog/bestsellers/items?category=..%2Fnames", "category"),
                ("/v1/catalog/rijksmuseum/items?sort=price-asc", "sort"),
            ]
            for (path, field) in cases {
                let response = try await api.get(path)
                #expect(response.status == .badRequest, "\(path)")
                #expect(response.problem?.errors?.map(\.field) == [field], "\(path)")
            }
            #expect(try await api.get("/v1/catalog/mobiles/categories").status == .notFound)
        }
    }

    @Test func withoutALoadedCopyOrAnUpstreamThePhonesAreUnavailable() async throws {
        try await CatalogHarness.withCatalog { api in
            let missing = try await api.get("/v1/catalog/mobiles/items")
            #expect(missing.status == .serviceUnavailable)
            #expect(missing.headers[.retryAfter] != nil)
        }
    }

    /// An operator's copy of the phones' API: read on the first request, pictures included.
    @Test func thePhonesRefreshFromAConfiguredCopyOfTheirAPI() async throws {
        try await CatalogHarness.withCatalog(environment: ["MOBILES_URL": CatalogHarness.replayURL]) { api in
            let phones = try await api.get("/v1/catalog/mobiles/items").decode(CatalogPage.self).items
            #expect(phones.count == 5)
            #expect(api.replay.requestLog.filter { $0.path.hasPrefix("/api/mobiles") }.count == 6)  // list + 5 pictures
            let third = try await api.get("/v1/catalog/mobiles/items/3").decode(CatalogItem.self)
            #expect(third.phone?.images?.isEmpty == false)
        }
    }

    @Test func cardsComeFromTheEndpointAndItsCopyServesWhileItFails() async throws {
        try await CatalogHarness.withCatalog { api in
            // No copy yet: the endpoint is read before the first answer.
            let first = try await api.get("/v1/catalog/flashcards/items?limit=50").decode(CatalogPage.self)
            #expect(first.items.count == 50)
            #expect(first.nextCursor != nil)
            let searched = try await api.get("/v1/catalog/flashcards/items?q=sort").decode(CatalogPage.self).items
            #expect(!searched.isEmpty && searched.allSatisfy { $0.title.localizedCaseInsensitiveContains("sort") })
        }
        try await CatalogHarness.withCatalog(loadDatasets: true) { api in
            api.replay.inject(.init(pathPrefix: "/api/v2/cards", status: 500))
            let cards = try await api.get("/v1/catalog/flashcards/items").decode(CatalogPage.self)
            #expect(cards.items.count == 20)
            let card = try #require(cards.items.first)
            #expect(try await api.get("/v1/catalog/flashcards/items/\(card.id)").decode(CatalogItem.self) == card)
        }
    }

    @Test func aBestSellerListThenABooksGoogleBooksDetail() async throws {
        try await CatalogHarness.withCatalog { api in
            let categories = try await api.get("/v1/catalog/bestsellers/categories").decode(CategoryList.self)
            #expect(categories.categories.count == 59)
            #expect(categories.categories.contains { $0.id == "hardcover-fiction" && $0.updated == "weekly" })
            let list = try await api.get("/v1/catalog/bestsellers/items?category=hardcover-fiction")
                .decode(CatalogPage.self)
            #expect(list.items.count == 15)
            #expect(list.items.map { $0.book?.rank } == Array(1...15))
            let book = try #require(list.items.first)
            let detail = try await api.get("/v1/catalog/bestsellers/items/\(book.id)").decode(CatalogItem.self)
            #expect(detail.book?.enriched == true)
            #expect(detail.book?.pageCount == 368)
            #expect(detail.book?.rank == 1)
            #expect(detail.imageURL == book.imageURL)
            // Another list is another category, with other books.
            let other = try #require(categories.categories.first { $0.id != "hardcover-fiction" })
            let otherList = try await api.get("/v1/catalog/bestsellers/items?category=\(other.id)")
                .decode(CatalogPage.self)
            #expect(!otherList.items.isEmpty)
            #expect(otherList.items.allSatisfy { $0.book?.category == other.id })
        }
    }

    @Test(arguments: ["spent", "spent400"])
    func aSpentGoogleQuotaServesTheListsFacts(_ key: String) async throws {
        try await CatalogHarness.withCatalog(environment: ["GOOGLE_BOOKS_API_KEY": key]) { api in
            let list = try await api.get("/v1/catalog/bestsellers/items?category=hardcover-fiction")
                .decode(CatalogPage.self)
            let book = try #require(list.items.first)
            let detail = try await api.get("/v1/catalog/bestsellers/items/\(book.id)")
            #expect(detail.status == .ok)
            let item = try detail.decode(CatalogItem.self)
            #expect(item.book?.enriched == false)
            #expect(item.title == book.title)
            // The quota is left alone for a while: a second book's detail does not ask Google again.
            let googleCalls = api.replay.requestLog.filter { $0.path.hasPrefix("/books/") }.count
            _ = try await api.get("/v1/catalog/bestsellers/items/\(list.items[1].id)")
            #expect(api.replay.requestLog.filter { $0.path.hasPrefix("/books/") }.count == googleCalls)
        }
    }

    @Test func fiftyUsersOpeningOneListCostOneCall() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_USER_RATE_PER_SECOND": "1000"]) { api in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        let token = try await CatalogHarness.token()
                        return try await api.get("/v1/catalog/bestsellers/items?category=hardcover-fiction",
                                                 token: .some(token)).status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .ok })
            // The list comes from the overview of every current list: one call, and no list's own.
            #expect(Self.nytCalls(api).filter { $0.hasSuffix("/lists/full-overview.json") }.count == 1)
            #expect(Self.nytCalls(api).filter { $0.contains("/lists/current/") }.isEmpty)
            #expect(Self.nytCalls(api).filter { $0.hasSuffix("names.json") }.count == 1)
        }
    }

    /// A list the overview does not carry (one no longer published) comes from its own current list, once.
    @Test func aListNoLongerPublishedComesFromItsOwnCall() async throws {
        try await CatalogHarness.withCatalog { api in
            let retired = "hardcover-graphic-books"
            let page = try await api.get("/v1/catalog/bestsellers/items?category=\(retired)").decode(CatalogPage.self)
            #expect(!page.items.isEmpty && page.items.allSatisfy { $0.book?.category == retired })
            #expect(Self.nytCalls(api).filter { !$0.hasSuffix("names.json") }
                == ["/svc/books/v3/lists/full-overview.json", "/svc/books/v3/lists/current/\(retired).json"])
        }
    }

    /// Two replicas, eight users each opening a list at once: the NYT never gets more than its 5 calls a minute;
    /// the others are told when to come back. Lists the overview does not carry, so each costs a call of its own.
    @Test func aBurstAcrossListsNeverSendsTheNYTMoreThanFiveCallsAMinute() async throws {
        try await CatalogHarness.withCatalog(environment: ["CATALOG_USER_RATE_PER_SECOND": "1000"],
                                             secondReplica: true) { api in
            let categories = try await api.get("/v1/catalog/bestsellers/categories").decode(CategoryList.self)
            let other = try #require(api.otherReplica)
            let current = try NYTBooks.listIDs(inOverview: api.replay.fixtures.nytBooks.overview.full)
            let lists = categories.categories.map(\.id).filter { !current.contains($0) }.prefix(8)
            #expect(lists.count == 8)
            let answers = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for (index, list) in lists.enumerated() {
                    let user = try await CatalogHarness.token()
                    group.addTask {
                        try await api.get("/v1/catalog/bestsellers/items?category=\(list)", token: .some(user),
                                          on: index.isMultiple(of: 2) ? api.client : other)
                    }
                }
                return try await group.reduce(into: [TestResponse]()) { $0.append($1) }
            }
            #expect(Self.nytCalls(api).count <= 5)  // the names, the overview, then at most three lists this minute
            let refused = answers.filter { $0.status == .serviceUnavailable }
            #expect(!refused.isEmpty)
            #expect(refused.allSatisfy { $0.problem?.type == .upstreamRateLimited && $0.headers[.retryAfter] != nil })
            #expect(answers.allSatisfy { [.ok, .serviceUnavailable].contains($0.status) })
        }
    }
}
