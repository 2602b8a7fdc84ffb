import Contracts

/// A page size from a `limit` query value: a positive whole number, clamped to `maximum` however many digits it has
/// (asking for more than the largest page gets the largest page, whether it fits an `Int` or not). Anything else is
/// the client's mistake, and the message says what is taken.
public enum PageLimit: Equatable, Sendable {
    case size(Int)
    case refused(FieldError)

    public static func parse(_ text: Substring?, default defaultLimit: Int, maximum: Int) -> PageLimit {
        guard let text else { return .size(defaultLimit) }
        let digits = text.drop { $0 == "0" }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), !digits.isEmpty else {
            return .refused(FieldError(
                field: "limit", message: "must be a whole number from 1 (values above \(maximum) give \(maximum))"))
        }
        return .size(Int(digits).map { min($0, maximum) } ?? maximum)
    }
}
