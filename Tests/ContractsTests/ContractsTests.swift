import Contracts
import Foundation
import Testing

/// The wire format clients depend on.
@Suite struct ContractsTests {
    @Test func codesEncodeAsBareStrings() throws {
        let problem = ProblemDetails(type: .validationFailed, title: "Bad Request", status: 400, detail: "x",
                                     requestId: "r1", errors: [FieldError(field: "email", message: "is required")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(problem), as: UTF8.self)
        #expect(json.contains(#""type":"validation-failed""#))
        #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(json.utf8)) == problem)
        let experience = try JSONDecoder().decode(ExperienceID.self, from: Data(#""rijksmuseum""#.utf8))
        #expect(experience == .rijksmuseum)
    }

    @Test func unknownExperiencesStillDecode() throws {
        let future = try JSONDecoder().decode(ExperienceID.self, from: Data(#""holograms""#.utf8))
        #expect(future.rawValue == "holograms")
        #expect(Experience.named(future) == nil)
        #expect(Experience.named(.ticketmaster)?.itemNoun == "Events")
        #expect(Set(Experience.all.map(\.id)).count == Experience.all.count)
    }

    /// A favorite is its item, when, and its version: nothing said twice. Identified by the item (its experience and
    /// id), and a favorite of the earlier shape (flat fields beside `item`, no version) does not pass for one.
    @Test func aFavoriteIsItsItemTimeAndVersion() throws {
        let card = CatalogItem(id: "own-1", experience: .flashcards, title: "Heap",
                               card: CardFacts(facts: ["A tree.", "Its root is the least."], writtenByUser: true))
        let favorite = Favorite(item: card, favoritedAt: Date(timeIntervalSince1970: 1_700_000_000), version: 7)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let json = try encoder.encode(favorite)
        let members = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(Set(members.keys) == ["item", "favoritedAt", "version"])
        #expect(String(decoding: json, as: UTF8.self).contains(#""writtenByUser":true"#))
        #expect(try decoder.decode(Favorite.self, from: json) == favorite)
        #expect(favorite.id == Favorite.ID(experience: .flashcards, itemId: "own-1"))
        #expect(favorite.id != Favorite.ID(experience: .mobiles, itemId: "own-1"))
        let earlier = #"{"experience":"flashcards","itemId":"own-1","title":"Heap","writtenByUser":true,"favoritedAt":"2023-11-14T22:13:20Z","item":{"id":"own-1","experience":"flashcards","title":"Heap"}}"#
        #expect(throws: DecodingError.self) { try decoder.decode(Favorite.self, from: Data(earlier.utf8)) }
    }
}
