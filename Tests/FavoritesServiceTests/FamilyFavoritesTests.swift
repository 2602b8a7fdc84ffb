import Contracts
import EventStore
import Foundation
@testable import FavoritesService
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Postgres
import TestSupport
import Testing

/// What the family's apps ask of the saved list: the phones sorted as the catalog is, users' own flash cards (no two
/// of one title, however they came in), the list filtered by text, and what each kind's cell needs kept.
@Suite(.serialized) struct FamilyFavoritesTests {
    static func page(_ api: FavoritesHarness, _ query: String, as user: FavoritesHarness.User) async throws -> FavoritePage {
        try await api.call(.get, "/v1/favorites?\(query)", as: user).decode(FavoritePage.self)
    }

    @discardableResult
    static func writeCard(_ api: FavoritesHarness, _ draft: CardDraft, as user: FavoritesHarness.User,
                          key: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(user.token)", .contentType: "application/json"]
        if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
        return try await api.client.execute(uri: "/v1/favorites/cards?experience=flashcards", method: .post, headers: headers,
                                            body: ByteBuffer(bytes: try JSONEncoder().encode(draft))) { $0 }
    }

    static func writeCard(_ api: FavoritesHarness, body: String, as user: FavoritesHarness.User) async throws
        -> TestResponse {
        let headers: HTTPFields = [.authorization: "Bearer \(user.token)", .contentType: "application/json"]
        return try await api.client.execute(uri: "/v1/favorites/cards?experience=flashcards", method: .post,
                                            headers: headers, body: ByteBuffer(string: body)) { $0 }
    }

    @Test func phonesAreSortedAsTheCatalogIsAndKeepWhatTheirCellShows() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            for id in ["1", "2", "3", "4", "5"] {
                #expect(try await api.call(.put, "/v1/favorites/mobiles/\(id)", as: ana).status == .created)
            }
            let recent = try await Self.page(api, "experience=mobiles", as: ana).items
            #expect(recent.map(\.item.id) == ["5", "4", "3", "2", "1"])  // the default: recent first
            #expect(recent.map(\.version) == [5, 4, 3, 2, 1])
            #expect(recent.allSatisfy { $0.item.phone?.price != nil && $0.item.phone?.rating != nil
                                        && $0.item.imageURL != nil && $0.item.subtitle != nil })
            let ascending = try await Self.page(api, "experience=mobiles&sort=price-asc", as: ana).items
                .compactMap(\.item.phone?.price)
            #expect(ascending == ascending.sorted() && ascending.count == 5)
            let descending = try await Self.page(api, "experience=mobiles&sort=price-desc", as: ana).items
            #expect(descending.compactMap(\.item.phone?.price) == ascending.reversed())
            let rated = try await Self.page(api, "experience=mobiles&sort=rating-desc", as: ana).items
                .compactMap(\.item.phone?.rating)
            #expect(rated == rated.sorted(by: >) && rated.count == 5)
            // Paging a descending sort: two pages, nothing skipped or repeated.
            let first = try await Self.page(api, "experience=mobiles&sort=price-desc&limit=3", as: ana)
            let next = try #require(first.nextCursor)
            let second = try await Self.page(api, "experience=mobiles&sort=price-desc&limit=3&cursor=\(next)", as: ana)
            #expect((first.items + second.items).map(\.item.id) == descending.map(\.item.id))
            // The swipe: one removed, the list sorted the same way without it.
            #expect(try await api.call(.delete, "/v1/favorites/mobiles/\(descending[0].item.id)", as: ana).status
                == .noContent)
            #expect(try await Self.page(api, "experience=mobiles&sort=price-desc", as: ana).items.map(\.item.id)
                == Array(descending.dropFirst().map(\.item.id)))
            // A sort the experience does not offer is refused, naming the field.
            let refused = try await api.call(.get, "/v1/favorites?experience=rijksmuseum&sort=price-asc", as: ana)
            #expect(refused.status == .badRequest)
            #expect(refused.problem?.errors?.map(\.field) == ["sort"])
        }
    }

    @Test func aUsersOwnCardsAreFavoritesNoTwoOfOneTitle() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            // Two public cards saved, with their facts kept for the cell's back.
            for id in ["1", "2"] {
                #expect(try await api.call(.put, "/v1/favorites/flashcards/\(id)", as: ana).status == .created)
            }
            let saved = try await Self.page(api, "experience=flashcards", as: ana).items
            #expect(saved.allSatisfy { ($0.item.card?.facts.count ?? 0) >= 1 && $0.item.card?.writtenByUser == nil })
            let savedTitle = try #require(saved.first?.item.title)

            // One written.
            let draft = CardDraft(title: "Quick Sort", facts: ["Divide and conquer around a pivot.", "O(n log n) on average."])
            let written = try await Self.writeCard(api, draft, as: ana)
            #expect(written.status == .created)
            let card = try written.decode(Favorite.self)
            #expect(card.item.card == CardFacts(facts: draft.facts, writtenByUser: true))
            #expect(card.item.title == "Quick Sort")
            #expect(card.item.id.hasPrefix("own-") && card.item.experience == .flashcards)

            // The same title, another case and spaces: refused, written or saved, either way round.
            let duplicate = try await Self.writeCard(api, CardDraft(title: "  quick SORT ", facts: ["a", "b"]), as: ana)
            #expect(duplicate.status == .conflict)
            #expect(duplicate.problem?.type == .cardTitleTaken)
            let likeSaved = try await Self.writeCard(api, CardDraft(title: savedTitle.uppercased(), facts: ["a", "b"]),
                                                     as: ana)
            #expect(likeSaved.problem?.type == .cardTitleTaken)
            // A public card whose title the user wrote: the catalog's cards have no "Quick Sort", so write one that
            // matches a public card the user has not saved, then try to save that card.
            let catalogCard = try await api.catalog.execute(uri: "/v1/catalog/flashcards/items/3", method: .get,
                                                            headers: [.authorization: "Bearer \(ana.token)"]) { $0 }
                .decode(CatalogItem.self)
            #expect(try await Self.writeCard(api, CardDraft(title: catalogCard.title, facts: ["x", "y"]), as: ana)
                .status == .created)
            let saveAfter = try await api.call(.put, "/v1/favorites/flashcards/3", as: ana)
            #expect(saveAfter.status == .conflict)
            #expect(saveAfter.problem?.type == .cardTitleTaken)

            // One fact, no title, too long: 400 naming each field.
            let oneFact = try await Self.writeCard(api, CardDraft(title: "Heap", facts: ["only one"]), as: ana)
            #expect(oneFact.status == .badRequest && oneFact.problem?.errors?.map(\.field) == ["facts"])
            let noTitle = try await Self.writeCard(api, CardDraft(title: "   ", facts: ["a", "b"]), as: ana)
            #expect(noTitle.problem?.errors?.map(\.field) == ["title"])
            let long = try await Self.writeCard(api, CardDraft(title: "Long", facts: ["a", String(repeating: "b", count: 1001)]),
                                                as: ana)
            #expect(long.problem?.errors?.map(\.field) == ["facts.1"])
            // Whatever is missing or mistyped, every field at fault is named, not only the first.
            for (body, fields) in [("{}", ["title", "facts"]), (#"{"title": 5}"#, ["title", "facts"]),
                                   (#"{"facts": ["only one"]}"#, ["title", "facts"]),
                                   (#"{"title": null, "facts": ["a", ""]}"#, ["title", "facts.1"]),
                                   (#"{"title": "", "facts": []}"#, ["title", "facts"])] {
                let refused = try await Self.writeCard(api, body: body, as: ana)
                #expect(refused.status == .badRequest, "\(body)")
                #expect(refused.problem?.type == .validationFailed, "\(body)")
                #expect(refused.problem?.errors?.map(\.field) == fields, "\(body)")
            }

            // Searched by title and by fact.
            #expect(try await Self.page(api, "experience=flashcards&q=QUICK", as: ana).items.map(\.item.id)
                == [card.item.id])
            #expect(try await Self.page(api, "experience=flashcards&q=pivot", as: ana).items.map(\.item.id)
                == [card.item.id])
            #expect(try await Self.page(api, "experience=flashcards&q=%25", as: ana).items.isEmpty)

            // Deleted like any favorite.
            #expect(try await api.call(.delete, "/v1/favorites/flashcards/\(card.item.id)", as: ana).status == .noContent)
            #expect(try await Self.page(api, "experience=flashcards&q=quick", as: ana).items.isEmpty)
            // Cards are written only where the experience has them.
            var headers: HTTPFields = [.authorization: "Bearer \(ana.token)", .contentType: "application/json"]
            headers[.accept] = "application/json"
            let elsewhere = try await api.client.execute(
                uri: "/v1/favorites/cards?experience=mobiles", method: .post, headers: headers,
                body: ByteBuffer(bytes: try JSONEncoder().encode(draft))) { $0 }
            #expect(elsewhere.status == .notFound)
        }
    }

    @Test func aRetriedWriteAnswersAsTheFirstAndConcurrentWritesOfOneTitleLeaveOneCard() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let draft = CardDraft(title: "Merge Sort", facts: ["Split in halves.", "Merge the sorted halves."])
            let first = try await Self.writeCard(api, draft, as: ana, key: "card-1")
            let retried = try await Self.writeCard(api, draft, as: ana, key: "card-1")
            #expect(first.status == .created && retried.status == .created)
            #expect(try retried.decode(Favorite.self) == first.decode(Favorite.self))
            #expect(try await api.eventTypes(of: ana) == ["card-written"])

            let ben = try await api.user()
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        try await Self.writeCard(api, CardDraft(title: index.isMultiple(of: 2) ? "Tries" : " tries",
                                                                facts: ["a", "b"]), as: ben).status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .created }.count == 1)
            #expect(statuses.filter { $0 == .conflict }.count == 7)
            #expect(try await Self.page(api, "experience=flashcards", as: ben).items.count == 1)
        }
    }

    /// Books newest first on another device (the changes feed too), with the author, cover and rank kept; a written
    /// card stays out of everyone's most favorited; rebuilt views equal the live ones with the new event in the log.
    @Test func booksNewestFirstOnASecondDeviceAndRebuildsWithCards() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let list = try await api.catalog.execute(
                uri: "/v1/catalog/bestsellers/items?category=hardcover-fiction", method: .get,
                headers: [.authorization: "Bearer \(ana.token)"]) { $0 }.decode(CatalogPage.self).items
            for book in list.prefix(3) {
                #expect(try await api.call(.put, "/v1/favorites/bestsellers/\(book.id)", as: ana).status == .created)
            }
            let device = FavoritesHarness.User(id: ana.id, token: try await api.authority.token(user: ana.id))
            let saved = try await Self.page(api, "experience=bestsellers", as: device).items
            #expect(saved.map(\.item.id) == list.prefix(3).reversed().map(\.id))
            #expect(saved.allSatisfy { $0.item.book?.rank != nil && $0.item.subtitle != nil && $0.item.imageURL != nil })
            let changes = try await api.call(.get, "/v1/favorites/changes?since=0", as: device)
                .decode(FavoriteChanges.self)
            #expect(changes.changes.compactMap(\.favorite?.item.book?.rank) == [1, 2, 3])

            _ = try await Self.writeCard(api, CardDraft(title: "Private", facts: ["mine", "only"]), as: ana)
            #expect(try await api.call(.put, "/v1/favorites/flashcards/1", as: ana).status == .created)
            try await api.withPool { pool in
                _ = try await eventually({ try await ProjectionBatch.lag(of: "popular", pool: pool).events }) { $0 == 0 }
                let popular = try await pool.query("SELECT item_id FROM popular_items WHERE experience = 'flashcards'")
                    .values(String.self)
                #expect(popular == ["1"])  // the written card is nobody else's business
                let live = try await ProjectionAPITests.views(pool)
                let reader = testConfigReader(databaseURL: api.database.connectionString, environment: [
                    "AUTH_URL": "http://127.0.0.1:1", "CATALOG_URL": "http://127.0.0.1:1",
                ])
                _ = try await FavoritesService.rebuild(view: .favorites, user: nil, reader: reader)
                _ = try await FavoritesService.rebuild(view: .popular, user: nil, reader: reader)
                #expect(try await ProjectionAPITests.views(pool) == live)
            }
        }
    }

    /// An item someone just favorited needs no catalog hop for the next favorite of it on the replica; one nobody
    /// looked up does.
    @Test func anItemLookedUpAMomentAgoIsFavoritedWithoutTheCatalog() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user(), ben = try await api.user()
            #expect(try await api.call(.put, "/v1/favorites/mobiles/1", as: ana).status == .created)
            api.catalogLink.stop()
            let again = try await api.call(.put, "/v1/favorites/mobiles/1", as: ben)
            #expect(again.status == .created)
            #expect(try again.decode(Favorite.self).item.phone?.price != nil)  // the full snapshot
            #expect(try await api.call(.put, "/v1/favorites/mobiles/2", as: ben).status == .serviceUnavailable)
        }
    }
}
