import Contracts
import Foundation

/// The public flash cards of the family's cards app (a mock API anyone can write to), in either of the two shapes
/// it has been seen in: a bare array of `{id, quizTitle, facts}`, or `{cards: [{id, cardTitle, facts}]}`.
///
/// Anyone can write to the upstream, so its text is untrusted: control characters are dropped, lengths bounded
/// (``maximumTitleLength``, ``maximumFactLength``, ``maximumFacts``), and a card without a title or a fact left
/// out. The copy kept in PostgreSQL is what is served while the endpoint is down or emptied.
struct FlashCardsSource: DatasetSource {
    let experience = ExperienceID.flashcards
    let upstream = UpstreamName.flashcards
    let maximumPageSize = 50

    static let maximumTitleLength = 200
    static let maximumFactLength = 1000
    static let maximumFacts = 10

    /// Ids of `A–Z a–z 0–9 _ -`, except those starting `own-`: that prefix names the cards users write (favorites),
    /// so a card of the public endpoint (which anyone can write to) can never take one's id.
    func canonicalID(_ id: String) -> String? {
        id.wholeMatch(of: #/[A-Za-z0-9_-]{1,64}/#) != nil && !id.hasPrefix("own-") ? id : nil
    }

    func refresh() -> SourceStep<[CatalogItem]> {
        .fetch(UpstreamRequest(upstream: upstream, path: "/api/v2/cards")) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            return .done(try cards(answer.body))
        }
    }

    func items(fromFiles files: [Data]) throws -> [CatalogItem] {
        guard files.count == 1 else { throw SourceError.malformedBody("the cards come in one file") }
        return try cards(files[0])
    }

    func listing(of item: CatalogItem) -> CatalogItem { item }

    func searchableText(of item: CatalogItem) -> String { item.title }

    func cards(_ body: Data) throws -> [CatalogItem] {
        let cards: [Card]
        if let list = try? JSONDecoder().decode(LossyArray<Card>.self, from: body) {
            cards = list.elements
        } else {
            cards = try Upstream.decode(Wrapper.self, from: body, source: "the cards API").cards.elements
        }
        var seen = Set<String>()
        return cards.compactMap { card -> CatalogItem? in
            guard let id = canonicalID(card.id), seen.insert(id).inserted,
                  let title = Self.untrusted(card.title, limit: Self.maximumTitleLength, keepingLines: false)
            else { return nil }
            let facts = card.facts.prefix(Self.maximumFacts).compactMap {
                Self.untrusted($0, limit: Self.maximumFactLength, keepingLines: true)
            }
            guard !facts.isEmpty else { return nil }
            return CatalogItem(id: id, experience: experience, title: title, card: CardFacts(facts: facts))
        }
    }

    /// Text from anyone: first cut to four bytes a character and stream-safe (``UserText/bounded(_:maximumBytes:)``:
    /// one "character" of a million combining marks would otherwise cost seconds to search), then control and format
    /// characters dropped (line breaks kept where asked), spaces collapsed, cut to `limit` characters; empty is nil.
    static func untrusted(_ text: String?, limit: Int, keepingLines: Bool) -> String? {
        guard let text = text.map({ UserText.bounded($0, maximumBytes: limit * 4) }) else { return nil }
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .replacingOccurrences(of: "\t", with: " ")
        let visible = normalized.unicodeScalars.filter { scalar in
            guard scalar != "\n" else { return true }
            switch scalar.properties.generalCategory {
            case .control, .format, .privateUse, .surrogate, .unassigned, .lineSeparator, .paragraphSeparator:
                return false
            default:
                return true
            }
        }
        let lines = String(String.UnicodeScalarView(visible)).split(separator: "\n")
            .compactMap { Upstream.collapsed(String($0)) }
        let joined = lines.joined(separator: keepingLines ? "\n" : " ")
        guard !joined.isEmpty else { return nil }
        return joined.count <= limit ? joined : String(joined.prefix(limit - 1)) + "…"
    }

    struct Wrapper: Decodable { var cards: LossyArray<Card> }

    /// `id` as a string or a number; the title under either name; facts of strings.
    struct Card: Decodable {
        var id: String
        var title: String?
        var facts: [String]

        enum CodingKeys: String, CodingKey { case id, quizTitle, cardTitle, facts }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let text = try? container.decode(String.self, forKey: .id) {
                id = text
            } else if let number = try container.decode(LenientNumber.self, forKey: .id).integer {
                id = String(number)
            } else {
                throw SourceError.malformedBody("a card without an id")
            }
            title = container.lenient(.quizTitle) ?? container.lenient(.cardTitle)
            facts = container.lenient(.facts, as: LossyArray<String>.self)?.elements ?? []
        }
    }
}
