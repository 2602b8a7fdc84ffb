@testable import FavoritesService
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

/// Cards written and searched as phones type: emoji sequences, Persian, accents composed or not, and the characters
/// that are refused, each by name.
@Suite struct FavoritesTextTests {
    static let titles = [
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466} Family",
        "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB} Coding",
        "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}",
    ]

    static func write(_ api: FavoritesHarness, _ title: String, as user: FavoritesHarness.User) async throws
        -> TestResponse
    {
        try await FamilyFavoritesTests.writeCard(api, CardDraft(title: title, facts: ["one fact", "another"]), as: user)
    }

    @Test func emojiPersianAndAccentsAreTextAndOneWordIsOneCard() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            for title in Self.titles {
                let written = try await Self.write(api, title, as: ana)
                #expect(written.status == .created, "\(title)")
                #expect(try written.decode(Favorite.self).item.title == title)
            }
            // Café typed decomposed is kept composed, and typed composed afterwards it is the same title.
            let decomposed = try await Self.write(api, "Cafe\u{301}", as: ana)
            #expect(decomposed.status == .created)
            #expect(Array(try decomposed.decode(Favorite.self).item.title.unicodeScalars) == Array("Caf\u{E9}".unicodeScalars))
            let composed = try await Self.write(api, "Caf\u{E9}", as: ana)
            #expect(composed.status == .conflict)
            #expect(composed.problem?.type == .cardTitleTaken)
            // Either spelling of the search finds it.
            for query in ["caf%C3%A9", "cafe%CC%81", "CAF%C3%A9"] {
                let found = try await FamilyFavoritesTests.page(api, "experience=flashcards&q=\(query)", as: ana).items
                #expect(found.map(\.item.title) == ["Caf\u{E9}"], "\(query)")
            }
            // A plus is a plus (URLComponents leaves it as it is), as in C++.
            #expect(try await Self.write(api, "C++ templates", as: ana).status == .created)
            #expect(try await FamilyFavoritesTests.page(api, "experience=flashcards&q=C++", as: ana).items.map(\.item.title)
                == ["C++ templates"])
            let persian = try await FamilyFavoritesTests.page(
                api, "experience=flashcards&q=\(Self.titles[2].addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                as: ana)
            #expect(persian.items.map(\.item.title) == [Self.titles[2]])
        }
    }

    @Test func unsafeCharactersAndBrokenTextAreRefusedByName() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let override = try await Self.write(api, "invoice_\u{202E}fdp.exe", as: ana)
            #expect(override.status == .badRequest)
            #expect(override.problem?.errors?.first?.message == "must not contain U+202E (RIGHT-TO-LEFT OVERRIDE)")
            let bell = try await FamilyFavoritesTests.writeCard(
                api, CardDraft(title: "Bell", facts: ["ring \u{7}", "fine\nwith a line break"]), as: ana)
            #expect(bell.problem?.errors?.map(\.field) == ["facts.0"])
            // A search that is not UTF-8, or carries NUL, is the client's mistake: 400 naming `q`, not an empty list.
            for query in ["%FF", "caf%C3", "a%00b", "%G1"] {
                let refused = try await api.call(.get, "/v1/favorites?experience=flashcards&q=\(query)", as: ana)
                #expect(refused.status == .badRequest, "\(query)")
                #expect(refused.problem?.errors?.map(\.field) == ["q"], "\(query)")
            }
        }
    }

    /// An item id in a path is told what is wrong with it: its length, a slash sent as %2F, a line break, or
    /// percent-encoding that does not decode.
    @Test func anItemIdIsToldWhatIsWrongWithIt() throws {
        func refusal(_ encoded: String) -> String? {
            do {
                _ = try FavoritesController.itemID(encoded)
                return nil
            } catch {
                return (error as? ServiceProblem)?.errors?.first?.message ?? "\(error)"
            }
        }
        #expect(try FavoritesController.itemID("RP-T-1930-54%28V%29") == "RP-T-1930-54(V)")
        #expect(refusal("SK-C%2F5")?.contains("slash") == true)
        #expect(refusal("SK%0AC")?.contains("line break") == true)
        #expect(refusal("SK-C%ZZ5")?.contains("percent-encoding") == true)
        #expect(refusal(String(repeating: "x", count: 129))?.contains("1 to 128 bytes") == true)
        #expect(refusal("")?.contains("1 to 128 bytes") == true)
    }

    /// A 128 KiB title took 4 s to normalise, and one "character" of 200,000 combining marks was stored. Now bytes and
    /// runs of marks are checked first.
    @Test func hugeTextAndLongRunsOfMarksAreRefusedBeforeAnythingElse() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let huge = try await Self.write(api, String(repeating: "\u{301}", count: 64 * 1024), as: ana)
            #expect(huge.status == .badRequest)
            #expect(huge.problem?.errors?.first?.message == "must be at most \(CardDraft.maximumTitleBytes) bytes (UTF-8)")
            let fact = "a" + String(repeating: "\u{301}", count: 200_000)
            let heavy = try await FamilyFavoritesTests.writeCard(api, CardDraft(title: "Heavy", facts: ["one", fact]),
                                                                 as: ana)
            #expect(heavy.problem?.errors?.map(\.field) == ["facts.1"])
            let ladder = try await Self.write(api, "e" + String(repeating: "\u{301}", count: 31), as: ana)
            #expect(ladder.problem?.errors?.first?.message == "must not have more than 30 combining marks in a row")
            #expect(try await Self.write(api, "e" + String(repeating: "\u{301}", count: 30), as: ana).status == .created)
        }
    }
}
