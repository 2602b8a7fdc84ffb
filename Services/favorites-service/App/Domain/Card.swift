import Contracts
import Foundation

/// A card a user writes, checked: a title and at least two facts, each within the bounds ``CardDraft`` publishes,
/// as text people type (surrounding spaces trimmed, runs of spaces kept as written, kept in NFC; only the characters
/// ``UserText`` calls unsafe refused, each named).
struct Card: Equatable, Sendable {
    var title: String
    var facts: [String]

    /// The card in `draft`, or every field that breaks a rule. Each text's bytes are checked before it is trimmed or
    /// normalised (``UserText/accepted(_:maximumCharacters:maximumBytes:allowingLineBreaks:)``).
    static func checked(_ draft: CardDraft) -> Result<Card, CardProblems> {
        var errors: [FieldError] = []
        var title = ""
        switch UserText.accepted(draft.title, maximumCharacters: CardDraft.maximumTitleLength,
                                 maximumBytes: CardDraft.maximumTitleBytes) {
        case .success(let accepted) where accepted.isEmpty:
            errors.append(FieldError(field: "title", message: "is required"))
        case .success(let accepted):
            title = accepted
        case .failure(let refusal):
            errors.append(FieldError(field: "title", message: refusal.message))
        }
        if draft.facts.count < CardDraft.minimumFacts || draft.facts.count > CardDraft.maximumFacts {
            errors.append(FieldError(field: "facts", message: "must be \(CardDraft.minimumFacts) to \(CardDraft.maximumFacts) facts"))
        }
        var facts: [String] = []
        // At most one more than allowed is looked at: the count is refused already, and each fact costs its length.
        for (index, raw) in draft.facts.prefix(CardDraft.maximumFacts + 1).enumerated() {
            switch UserText.accepted(raw, maximumCharacters: CardDraft.maximumFactLength,
                                     maximumBytes: CardDraft.maximumFactBytes, allowingLineBreaks: true) {
            case .success(let fact) where fact.isEmpty:
                errors.append(FieldError(field: "facts.\(index)", message: "is empty"))
            case .success(let fact):
                facts.append(fact)
            case .failure(let refusal):
                errors.append(FieldError(field: "facts.\(index)", message: refusal.message))
            }
        }
        return errors.isEmpty ? .success(Card(title: title, facts: facts)) : .failure(CardProblems(errors: errors))
    }

    /// The id a written card gets: from the request's event id, so a retry names the same card, with a prefix the
    /// catalog refuses in its cards' ids.
    static func itemID(for eventID: UUID) -> String {
        "own-" + eventID.uuidString.lowercased()
    }
}

struct CardProblems: Error, Equatable {
    var errors: [FieldError]
}
