import Contracts
import Foundation
import NIOHTTP1
import Testing

extension EndToEnd {
    /// Each catalog as a keyless stack serves it through the gateway (the replay of the recorded upstreams), as the
    /// apps' screens ask for it.
    @Suite struct CatalogSourcesTests {
        /// A signed-in client of the gateway whose account chose `experience`.
        static func signedIn(_ experience: ExperienceID) async throws -> StackClient {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let signUp = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: uniqueEmail(experience.rawValue), password: accountPassword, experience: experience.rawValue))
            #expect(signUp.status == .created)
            return anonymous.with(token: try signUp.decode(AuthSession.self).accessToken)
        }

        /// The Rijksmuseum from its key-less data services: artworks by a maker's name with IIIF images, the painting by
        /// its English or Dutch title, and its detail in English. The stack asks for records as the museum's resolver
        /// is asked (`localhost/id/<n>`), which sends each to the data host (`127.0.0.1/<n>`) with a 303.
        @Test func rijksmuseumArtworksByNameAndTheNightWatchInEnglish() async throws {
            let app = try await Self.signedIn(.rijksmuseum)
            let rembrandt = try await app.wholePage("/v1/catalog/rijksmuseum/items?q=rembrandt")
            #expect(rembrandt.items.count >= 3)
            #expect(rembrandt.items.allSatisfy { $0.subtitle?.localizedCaseInsensitiveContains("rembrandt") == true })
            #expect(rembrandt.items.contains { $0.imageURL?.hasPrefix("https://iiif.micr.io/") == true })
            for title in ["Night%20Watch", "Nachtwacht"] {
                let found = try await app.wholePage("/v1/catalog/rijksmuseum/items?q=\(title)")
                #expect(found.items.map(\.id).contains("SK-C-5"), "\(title)")
            }
            let nightWatch = try await app.get("/v1/catalog/rijksmuseum/items/SK-C-5").decode(CatalogItem.self)
            #expect(nightWatch.artwork?.plaqueDescription?.hasPrefix("Rembrandt’s largest") == true)
            #expect(nightWatch.artwork?.dating == "1642")
            #expect(nightWatch.artwork?.productionPlaces.contains("Amsterdam") == true)
            #expect(nightWatch.imageURL?.hasPrefix("https://iiif.micr.io/") == true)

            let stack = try StackUnderTest.required()
            try #require(!stack.replayURL.isEmpty, "needs E2E_REPLAY_URL")
            struct Logged: Decodable { let path: String }
            let log = try await StackClient(stack.replayURL).get("/__replay/requests").decode([Logged].self).map(\.path)
            let resolved = log.firstIndex(of: "/id/200107928")
            let served = log.lastIndex(of: "/200107928")
            #expect(resolved != nil && served != nil && resolved! < served!)  // the resolver's redirect, followed
        }

        /// The phones app: the list, sorted three ways, and a phone's pictures.
        @Test func mobilesListedSortedThreeWaysWithAPhonesImages() async throws {
            let app = try await Self.signedIn(.mobiles)
            let list = try await app.get("/v1/catalog/mobiles/items").decode(CatalogPage.self).items
            #expect(list.count == 5)
            let ascending = try await app.get("/v1/catalog/mobiles/items?sort=price-asc").decode(CatalogPage.self).items
            #expect(ascending.compactMap(\.phone?.price) == list.compactMap(\.phone?.price).sorted())
            let descending = try await app.get("/v1/catalog/mobiles/items?sort=price-desc").decode(CatalogPage.self).items
            #expect(descending.map(\.id) == ascending.map(\.id).reversed())
            let rated = try await app.get("/v1/catalog/mobiles/items?sort=rating-desc").decode(CatalogPage.self).items
            #expect(rated.compactMap(\.phone?.rating) == list.compactMap(\.phone?.rating).sorted(by: >))
            let phone = try await app.get("/v1/catalog/mobiles/items/1").decode(CatalogItem.self)
            #expect((phone.phone?.images?.count ?? 0) >= 3)
            #expect(phone.phone?.images?.allSatisfy { $0.hasPrefix("https://") } == true)
        }

        /// The best sellers app: a list chosen from the categories, its books, a book's Google Books detail.
        @Test func bestSellersByListWithABooksGoogleBooksDetail() async throws {
            let app = try await Self.signedIn(.bestsellers)
            let lists = try await app.get("/v1/catalog/bestsellers/categories").decode(CategoryList.self).categories
            #expect(lists.contains { $0.id == "hardcover-fiction" })
            let books = try await app.get("/v1/catalog/bestsellers/items?category=hardcover-fiction")
                .decode(CatalogPage.self).items
            #expect(books.count == 15)
            #expect(books.first?.book?.weeksOnList != nil && books.first?.imageURL != nil)
            let detail = try await app.get("/v1/catalog/bestsellers/items/\(books[0].id)").decode(CatalogItem.self)
            #expect(detail.book?.enriched == true)
            #expect(detail.book?.pageCount == 368)
        }

        /// The flash cards app's search tab: the public cards, and a search by title.
        @Test func publicFlashCardsListedAndSearched() async throws {
            let app = try await Self.signedIn(.flashcards)
            let page = try await app.get("/v1/catalog/flashcards/items?limit=50").decode(CatalogPage.self)
            #expect(page.items.count == 50)
            #expect(page.items.allSatisfy { ($0.card?.facts.count ?? 0) >= 1 })
            let next = try #require(page.nextCursor)
            #expect(try await app.get("/v1/catalog/flashcards/items?cursor=\(next)").decode(CatalogPage.self).items.count
                == 2)
            let found = try await app.get("/v1/catalog/flashcards/items?q=sort").decode(CatalogPage.self).items
            #expect(!found.isEmpty && found.allSatisfy { $0.title.localizedCaseInsensitiveContains("sort") })
        }
    }
}
