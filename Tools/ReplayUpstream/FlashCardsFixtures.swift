import Foundation

/// The flash cards mock API (`5daf8b36f2946f001481d81c.mockapi.io/api/v2/cards`): the recorded live array, served
/// byte for byte. The wrapped `{cardListType, apiVersion, cards}` recording is not served: the live endpoint never
/// answered with it; it is what some clients wrongly assumed, and decoding tests read it from the fixtures directly.
struct FlashCardsFixtures: Sendable {
    static let cards = "flashcards/bcecilio-cards-live.json"

    let cardsBody: Data

    init(root: URL) throws {
        cardsBody = try Data(contentsOf: root.appending(path: Self.cards))
    }

    func cards() -> (Int, Data) { (200, cardsBody) }
}
