import Contracts
import Foundation

/// The body of `POST /v1/favorites/cards` as sent, each field read on its own: a body missing both fields (`{}`), or
/// with one of another type, is refused naming every field at fault, not only the first one a decoder stops at.
struct CardForm: Decodable {
    var title: String?
    var facts: [String]?
    /// The fields missing, null or of another type.
    var errors: [FieldError] = []

    enum CodingKeys: String, CodingKey { case title, facts }

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        title = Self.read(.title, in: fields, expecting: "a string", errors: &errors)
        facts = Self.read(.facts, in: fields, expecting: "an array of strings", errors: &errors)
    }

    /// The card, or every field at fault: the form's own refusals first, then the card's rules for the other fields.
    func checked() -> Result<Card, CardProblems> {
        let named = Set(errors.map(\.field))
        switch Card.checked(CardDraft(title: title ?? "", facts: facts ?? [])) {
        case .success(let card):
            return errors.isEmpty ? .success(card) : .failure(CardProblems(errors: errors))
        case .failure(let problems):
            // `facts.1` belongs to `facts`: a field the form already refused is named once.
            let others = problems.errors.filter { !named.contains(String($0.field.prefix { $0 != "." })) }
            return .failure(CardProblems(errors: errors + others))
        }
    }

    private static func read<Value: Decodable>(_ key: CodingKeys, in fields: KeyedDecodingContainer<CodingKeys>,
                                               expecting shape: String, errors: inout [FieldError]) -> Value? {
        guard fields.contains(key) else {
            errors.append(FieldError(field: key.stringValue, message: "is required"))
            return nil
        }
        if (try? fields.decodeNil(forKey: key)) == true {
            errors.append(FieldError(field: key.stringValue, message: "must not be null"))
            return nil
        }
        guard let value = try? fields.decode(Value.self, forKey: key) else {
            errors.append(FieldError(field: key.stringValue, message: "must be \(shape)"))
            return nil
        }
        return value
    }
}
