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
        /// its English or Dutch title, and its detail in English.
        @Test func rijksmuseumArtworksByNameAndTheNightWatchInEnglish() async throws {
            let app = try await Self.signedIn(.rijksmuseum)
            let rembrandt = try await app.get("/v1/catalog/rijksmuseum/items?q=rembrandt").decode(CatalogPage.self)
            #expect(rembrandt.items.count >= 3)
            #expect(rembrandt.items.allSatisfy { $0.subtitle?.localizedCaseInsensitiveContains("rembrandt") == true })
            #expect(rembrandt.items.contains { $0.imageURL?.hasPrefix("https://iiif.micr.io/") == true })
            for title in ["Night%20Watch", "Nachtwacht"] {
                let found = try await app.get("/v1/catalog/rijksmuseum/items?q=\(title)").decode(CatalogPage.self)
                #expect(found.items.map(\.id).contains("SK-C-5"), "\(title)")
            }
            let nightWatch = try await app.get("/v1/catalog/rijksmuseum/items/SK-C-5").decode(CatalogItem.self)
            #expect(nightWatch.artwork?.plaqueDescription?.hasPrefix("Rembrandt’s largest") == true)
            #expect(nightWatch.artwork?.dating == "1642")
            #expect(nightWatch.artwork?.productionPlaces.contains("Amsterdam") == true)
            #expect(nightWatch.imageURL?.hasPrefix("https://iiif.micr.io/") == true)
        }
    }
}
