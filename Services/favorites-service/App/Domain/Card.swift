import Contracts
import Foundation

/// A card a user writes, checked: a title and at least two facts, each within the bounds ``CardDraft`` publishes,
/// as text people type (surrounding spaces trimmed, runs of spaces kept as written, kept in NFC; only the characters
/// ``UserText`` calls unsafe refused, each named).
struct Card: Equatable, Sendable {
    var title: String
    var facts: [String]

    /// The card in `draft`, or every field that breaks a rule.
    static func checked(_ draft: CardDraft) -> Result<Card, CardProblems> {
        var errors: [FieldError] = []
        let title = UserText.normalized(draft.title.trimmingCharacters(in: .whitespacesAndNewlines))
        if title.isEmpty {
            errors.append(FieldError(field: "title", message: "is required"))
        } else if title.count > CardDraft.maximumTitleLength {
            errors.append(FieldError(field: "title", message: "must be at most \(CardDraft.maximumTitleLength) characters"))
        } else if let unsafe = UserText.firstUnsafe(in: title) {
            errors.append(FieldError(field: "title", message: unsafe == "\n" ? "must be one line" : UserText.refusal(of: unsafe)))
        }
        let facts = draft.facts.map { UserText.normalized($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        if facts.count < CardDraft.minimumFacts || facts.count > CardDraft.maximumFacts {
            errors.append(FieldError(field: "facts", message: "must be \(CardDraft.minimumFacts) to \(CardDraft.maximumFacts) facts"))
        }
        for (index, fact) in facts.enumerated() {
            if fact.isEmpty {
                errors.append(FieldError(field: "facts.\(index)", message: "is empty"))
            } else if fact.count > CardDraft.maximumFactLength {
                errors.append(FieldError(field: "facts.\(index)", message: "must be at most \(CardDraft.maximumFactLength) characters"))
            } else if let unsafe = UserText.firstUnsafe(in: fact, allowingLineBreaks: true) {
                errors.append(FieldError(field: "facts.\(index)", message: UserText.refusal(of: unsafe)))
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
