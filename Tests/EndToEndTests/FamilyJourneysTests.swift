import Contracts
import Foundation
import NIOHTTP1
import Testing

extension EndToEnd {
    /// The family's apps through the gateway, one journey per brief, as each app's screens make it.
    @Suite struct FamilyJourneysTests {
        static func favorites(_ app: StackClient, _ query: String) async throws -> [Favorite] {
            try await app.get("/v1/favorites?\(query)").decode(FavoritePage.self).items
        }

        /// One item shape: a favorite carries its item as the catalog's list cell shows it, with what each app's
        /// favorites cell reads: a phone's description, price and rating; a book's list, rank, weeks and description;
        /// an event's date, venue and prices with their currency; an artwork's list-sized image, not the full one.
        @Test func aFavoriteCarriesTheItemItsCellShows() async throws {
            let phones = try await CatalogSourcesTests.signedIn(.mobiles)
            let phone = try #require(try await phones.get("/v1/catalog/mobiles/items").decode(CatalogPage.self).items.first)
            let savedPhone = try await phones.send(.PUT, "/v1/favorites/mobiles/\(phone.id)").decode(Favorite.self)
            #expect(savedPhone.item == phone)  // the very cell the catalog list drew
            #expect(savedPhone.item.phone?.description?.isEmpty == false)
            #expect(savedPhone.item.phone?.images == nil)  // detail-only

            let books = try await CatalogSourcesTests.signedIn(.bestsellers)
            let book = try #require(try await books.get("/v1/catalog/bestsellers/items?category=hardcover-fiction")
                .decode(CatalogPage.self).items.first)
            let savedBook = try await books.send(.PUT, "/v1/favorites/bestsellers/\(book.id)").decode(Favorite.self)
            #expect(savedBook.item.book?.category == "hardcover-fiction")
            #expect(savedBook.item.book?.rank == book.book?.rank && savedBook.item.book?.weeksOnList != nil)
            #expect(savedBook.item.book?.description?.isEmpty == false)
            // Read back in a list, the same.
            #expect(try await Self.favorites(books, "experience=bestsellers").first?.item == savedBook.item)

            let events = try await CatalogSourcesTests.signedIn(.ticketmaster)
            let savedEvent = try await events.send(.PUT, "/v1/favorites/ticketmaster/G5diZfkn0B-bh").decode(Favorite.self)
            #expect(savedEvent.item.event?.localDate != nil && savedEvent.version > 0)
            #expect(savedEvent.item.event?.venue?.name.isEmpty == false)
            #expect(savedEvent.item.event?.priceRanges?.first?.currency?.isEmpty == false)
            // One cell per experience: an event hearted in the list is kept as that very cell, prices and all.
            let listedEvent = try #require(try await events.get("/v1/catalog/ticketmaster/items?q=Chicago")
                .decode(CatalogPage.self).items.first { $0.event?.priceRanges != nil })
            let savedListed = try await events.send(.PUT, "/v1/favorites/ticketmaster/\(listedEvent.id)")
                .decode(Favorite.self)
            #expect(savedListed.item == listedEvent)

            let museum = try await CatalogSourcesTests.signedIn(.rijksmuseum)
            let listed = try #require(try await museum.wholePage("/v1/catalog/rijksmuseum/items?q=rembrandt")
                .items.first { $0.imageURL != nil })
            let detail = try await museum.get("/v1/catalog/rijksmuseum/items/\(listed.id)").decode(CatalogItem.self)
            let savedArt = try await museum.send(.PUT, "/v1/favorites/rijksmuseum/\(listed.id)").decode(Favorite.self)
            #expect(savedArt.item.imageURL == listed.imageURL)
            #expect(savedArt.item.imageURL != detail.imageURL)  // the list size, not the full image
            #expect(savedArt.item.artwork?.plaqueDescription == nil)
            // No museum cell or favorite loads an original (`=s0`): browsed cells and a saved one are cell-sized.
            let browsed = try await museum.wholePage("/v1/catalog/rijksmuseum/items?limit=30").items
            let pictured = browsed.compactMap(\.imageURL)
            #expect(!pictured.isEmpty && !pictured.contains { $0.hasSuffix("=s0") })
            let hosted = try #require(browsed.first { $0.imageURL?.contains("googleusercontent.com") == true })
            #expect(hosted.imageURL?.hasSuffix("=s400") == true)
            let savedHosted = try await museum.send(.PUT, "/v1/favorites/rijksmuseum/\(hosted.id)")
                .decode(Favorite.self)
            #expect(savedHosted.item.imageURL == hosted.imageURL)
            let hostedDetail = try await museum.get("/v1/catalog/rijksmuseum/items/\(hosted.id)")
                .decode(CatalogItem.self)
            #expect(hostedDetail.imageURL?.hasSuffix("=s1600") == true)
        }

        /// The events app: saved events listed soonest first by default, page after page, whatever order they were
        /// hearted in.
        @Test func eventsFavoritesListedSoonestFirst() async throws {
            let app = try await CatalogSourcesTests.signedIn(.ticketmaster)
            let events = try await app.get("/v1/catalog/ticketmaster/items?q=Chicago")
                .decode(CatalogPage.self).items
            try #require(events.count >= 3)
            for event in events.prefix(4) {
                #expect(try await app.send(.PUT, "/v1/favorites/ticketmaster/\(event.id)").status == .created)
            }
            // Undated events (to be announced) come last.
            func when(_ favorite: Favorite) -> String {
                "\(favorite.item.event?.localDate ?? "~")T\(favorite.item.event?.localTime ?? "")"
            }
            let listed = try await Self.favorites(app, "experience=ticketmaster")
            #expect(listed.count == min(4, events.count))
            #expect(listed.map(when) == listed.map(when).sorted())
            // Not merely the order they were hearted in (the other apps' default): the recordings' order is not by date.
            let recent = try await Self.favorites(app, "experience=ticketmaster&sort=recent")
            #expect(recent.map(\.item.id) == events.prefix(4).map(\.id).reversed())
            #expect(recent.map(\.item.id) != listed.map(\.item.id))
            #expect(try await Self.favorites(app, "experience=ticketmaster&sort=date").map(\.item.id)
                == listed.map(\.item.id))
            // One at a time, by cursor: the same order.
            var paged: [String] = []
            var cursor: String?
            repeat {
                let page = try await app.get("/v1/favorites?experience=ticketmaster&sort=date&limit=1"
                                             + (cursor.map { "&cursor=\($0)" } ?? "")).decode(FavoritePage.self)
                paged += page.items.map(\.item.id)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(paged == listed.map(\.item.id))
        }

        /// The phones app: the catalog and the favorites sorted the same three ways, and a swipe removes one.
        @Test func mobilesSortedThreeWaysInTheCatalogAndTheFavorites() async throws {
            let app = try await CatalogSourcesTests.signedIn(.mobiles)
            for sort in ["price-asc", "price-desc", "rating-desc"] {
                let phones = try await app.get("/v1/catalog/mobiles/items?sort=\(sort)").decode(CatalogPage.self).items
                #expect(phones.count == 5, "\(sort)")
            }
            for id in ["2", "4", "1"] {
                #expect(try await app.send(.PUT, "/v1/favorites/mobiles/\(id)").status == .created)
            }
            let byPrice = try await Self.favorites(app, "experience=mobiles&sort=price-asc")
            let prices = byPrice.compactMap(\.item.phone?.price)
            #expect(prices == prices.sorted() && prices.count == 3)
            let catalogOrder = try await app.get("/v1/catalog/mobiles/items?sort=price-asc").decode(CatalogPage.self)
                .items.map(\.id).filter { ["1", "2", "4"].contains($0) }
            #expect(byPrice.map(\.item.id) == catalogOrder)  // the same order as the catalog's
            let byPriceDown = try await Self.favorites(app, "experience=mobiles&sort=price-desc")
            #expect(byPriceDown.map(\.item.id) == byPrice.map(\.item.id).reversed())
            let byRating = try await Self.favorites(app, "experience=mobiles&sort=rating-desc")
                .compactMap(\.item.phone?.rating)
            #expect(byRating == byRating.sorted(by: >) && byRating.count == 3)
            #expect(try await app.send(.DELETE, "/v1/favorites/mobiles/\(byPrice[0].item.id)").status == .noContent)
            #expect(try await Self.favorites(app, "experience=mobiles&sort=price-asc").map(\.item.id)
                == Array(byPrice.dropFirst().map(\.item.id)))
        }

        /// Positions that cannot lie: a catalog cursor sent with another sort, and a sync position past the user's
        /// log (4 events here), are refused with a problem that says so, instead of a page of another list or an
        /// empty answer that skips changes.
        @Test func aMismatchedCursorAndAFuturePositionAreRefused() async throws {
            let app = try await CatalogSourcesTests.signedIn(.mobiles)
            let first = try await app.get("/v1/catalog/mobiles/items?sort=price-asc&limit=2").decode(CatalogPage.self)
            let cursor = try #require(first.nextCursor)
            #expect(try await app.get("/v1/catalog/mobiles/items?sort=price-asc&cursor=\(cursor)").status == .ok)
            let crossed = try await app.get("/v1/catalog/mobiles/items?sort=price-desc&cursor=\(cursor)")
            #expect(crossed.status == .badRequest)
            #expect(crossed.problem?.errors?.map(\.field) == ["cursor"])
            for id in ["1", "2", "3", "4"] {
                #expect(try await app.send(.PUT, "/v1/favorites/mobiles/\(id)").status == .created)
            }
            #expect(try await app.get("/v1/favorites/changes?since=4").decode(FavoriteChanges.self).changes.isEmpty)
            let ahead = try await app.get("/v1/favorites/changes?since=999")
            #expect(ahead.status == .conflict)
            #expect(ahead.problem?.type == .syncPositionAhead)
        }

        /// The flash cards app: two public cards saved, one written, duplicates refused both ways, a one-fact card
        /// refused, the collection searched, a card deleted.
        @Test func flashCardsSavedWrittenDeduplicatedSearchedAndDeleted() async throws {
            let app = try await CatalogSourcesTests.signedIn(.flashcards)
            let publicCards = try await app.get("/v1/catalog/flashcards/items").decode(CatalogPage.self).items
            for card in publicCards.prefix(2) {
                #expect(try await app.send(.PUT, "/v1/favorites/flashcards/\(card.id)").status == .created)
            }
            let written = try await app.send(.POST, "/v1/favorites/cards?experience=flashcards", json: CardDraft(
                title: "Binary Search", facts: ["Halve the sorted range each step.", "O(log n)."]))
            #expect(written.status == .created)
            let card = try written.decode(Favorite.self)
            // Written twice, or written with a saved card's title: refused.
            for title in [" binary search", publicCards[0].title.uppercased()] {
                let duplicate = try await app.send(.POST, "/v1/favorites/cards?experience=flashcards",
                                                   json: CardDraft(title: title, facts: ["a", "b"]))
                #expect(duplicate.status == .conflict, "\(title)")
                #expect(duplicate.problem?.type == .cardTitleTaken)
            }
            // Saved when a card of that title was written: refused too.
            let third = publicCards[2]
            #expect(try await app.send(.POST, "/v1/favorites/cards?experience=flashcards",
                                       json: CardDraft(title: third.title, facts: ["mine", "too"])).status == .created)
            let saved = try await app.send(.PUT, "/v1/favorites/flashcards/\(third.id)")
            #expect(saved.problem?.type == .cardTitleTaken)
            let oneFact = try await app.send(.POST, "/v1/favorites/cards?experience=flashcards",
                                             json: CardDraft(title: "Heap", facts: ["only one"]))
            #expect(oneFact.status == .badRequest)
            #expect(oneFact.problem?.errors?.map(\.field) == ["facts"])
            #expect(try await Self.favorites(app, "experience=flashcards&q=binary").map(\.item.id) == [card.item.id])
            #expect(try await Self.favorites(app, "experience=flashcards").count == 4)
            #expect(try await app.send(.DELETE, "/v1/favorites/flashcards/\(card.item.id)").status == .noContent)
            #expect(try await Self.favorites(app, "experience=flashcards&q=binary").isEmpty)
        }

        /// Card titles as phones type them, through the gateway: emoji sequences and Persian are text, `Café` typed
        /// either way is one card and either spelling finds it, and a search that is not UTF-8 is refused.
        @Test func flashCardTitlesAsPhonesTypeThem() async throws {
            let app = try await CatalogSourcesTests.signedIn(.flashcards)
            let titles = ["\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466} Family",
                          "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB} Coding", "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}"]
            for title in titles {
                let written = try await app.send(.POST, "/v1/favorites/cards?experience=flashcards",
                                                 json: CardDraft(title: title, facts: ["one", "two"]))
                #expect(written.status == .created, "\(title)")
            }
            let decomposed = try await app.send(.POST, "/v1/favorites/cards?experience=flashcards",
                                                json: CardDraft(title: "Cafe\u{301}", facts: ["one", "two"]))
            #expect(decomposed.status == .created)
            let composed = try await app.send(.POST, "/v1/favorites/cards?experience=flashcards",
                                              json: CardDraft(title: "Caf\u{E9}", facts: ["one", "two"]))
            #expect(composed.status == .conflict)
            for query in ["caf%C3%A9", "cafe%CC%81"] {
                #expect(try await Self.favorites(app, "experience=flashcards&q=\(query)").count == 1, "\(query)")
            }
            #expect(Set(try await Self.favorites(app, "experience=flashcards").map(\.item.title))
                == Set(titles + ["Caf\u{E9}"]))
            let broken = try await app.get("/v1/favorites?experience=flashcards&q=%FF")
            #expect(broken.status == .badRequest)
            #expect(broken.problem?.errors?.map(\.field) == ["q"])
        }

        /// The best sellers app: a default category set (an unknown one refused), books saved, and on a second
        /// device the same default and the books newest first.
        @Test func bestSellersDefaultCategoryAndBooksNewestFirstOnASecondDevice() async throws {
            let stack = try StackUnderTest.required()
            let email = uniqueEmail("bestsellers")
            let anonymous = StackClient(stack.gateway)
            let signUp = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: email, password: accountPassword, experience: "bestsellers"))
            let app = anonymous.with(token: try signUp.decode(AuthSession.self).accessToken)
            let unknown = try await app.send(.PATCH, "/v1/auth/me",
                                             json: ProfileUpdate(preferences: ["defaultCategory": "no-such-list"]))
            #expect(unknown.status == .badRequest)
            #expect(unknown.problem?.errors?.map(\.field) == ["preferences.defaultCategory"])
            let set = try await app.send(.PATCH, "/v1/auth/me",
                                         json: ProfileUpdate(preferences: ["defaultCategory": "hardcover-fiction"]))
            #expect(set.status == .ok)

            let books = try await app.get("/v1/catalog/bestsellers/items?category=hardcover-fiction")
                .decode(CatalogPage.self).items
            for book in books.prefix(3) {
                #expect(try await app.send(.PUT, "/v1/favorites/bestsellers/\(book.id)").status == .created)
            }
            let signIn = try await anonymous.send(.POST, "/v1/auth/login", json: SignInRequest(
                email: email, password: accountPassword, deviceName: "second device"))
            let device = anonymous.with(token: try signIn.decode(AuthSession.self).accessToken)
            let profile = try await device.get("/v1/auth/me").decode(UserProfile.self)
            #expect(profile.preferences["defaultCategory"] == "hardcover-fiction")
            let saved = try await Self.favorites(device, "experience=bestsellers")
            #expect(saved.map(\.item.id) == books.prefix(3).reversed().map(\.id))
            #expect(saved.allSatisfy { $0.item.book?.rank != nil && $0.item.subtitle != nil })
            let detail = try await device.get("/v1/catalog/bestsellers/items/\(saved[0].item.id)")
                .decode(CatalogItem.self)
            #expect(detail.book?.isbn13 == saved[0].item.id)
        }
    }
}
