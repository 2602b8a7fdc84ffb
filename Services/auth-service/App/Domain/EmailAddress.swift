import Contracts
import Foundation

/// An email address in the one form we store and compare, as mail systems see it: the local part trimmed, in NFC and
/// lower case; the domain in IDNA's ASCII form (`bücher.example` is `xn--bcher-kva.example`, one account whichever
/// way it is typed).
///
/// Lower-casing the local part is a deliberate choice: no mainstream provider treats `Ana@` and `ana@` as two
/// mailboxes, and two accounts differing only in case would be a support and phishing hazard. For the same reason a
/// local part that only looks like another is refused rather than made a second account: one that NFKC would change
/// (full-width `ａｎａ`, ligatures, superscripts) and one that mixes scripts (a Cyrillic `е` among Latin letters).
struct EmailAddress: Equatable, Sendable, CustomStringConvertible {
    let value: String
    var description: String { value }

    static let maximumLength = 254
    /// What is read of the raw field at all: the longest address and room for spaces a form adds around it. Checked
    /// before anything else, so no field costs more than this to look at.
    static let maximumRawBytes = 320
    static let invalidMessage = "must be an email address such as name@example.com"

    /// Nil when `raw` is not a plausible address (the mailbox is proven only by mail).
    init?(normalizing raw: String) {
        guard case .success(let email) = Self.parse(raw) else { return nil }
        self = email
    }

    /// An address read back from the accounts table: normalised when it was stored (under the rules of that time).
    init(stored value: String) { self.value = value }

    private init(value: String) { self.value = value }

    /// The address in `raw`, or why it is refused (a field error's message).
    static func parse(_ raw: String) -> Result<EmailAddress, UserText.Refusal> {
        if let problem = UserText.sizeProblem(of: raw, maximumBytes: maximumRawBytes) {
            return .failure(UserText.Refusal(message: problem))
        }
        let text = UserText.normalized(raw.trimmingCharacters(in: .whitespacesAndNewlines)).lowercased()
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, isPlausibleLocalPart(parts[0]), let domain = asciiDomain(String(parts[1])) else {
            return .failure(UserText.Refusal(message: invalidMessage))
        }
        let local = String(parts[0])
        if local.precomposedStringWithCompatibilityMapping.lowercased() != local {
            return .failure(UserText.Refusal(message:
                "must not contain characters that stand for others, such as full-width letters"))
        }
        if WritingScript.isMixed(local) {
            return .failure(UserText.Refusal(message: "must not mix letters of different scripts before the @"))
        }
        let value = local + "@" + domain
        guard value.utf8.count <= maximumLength else {
            return .failure(UserText.Refusal(message: "must be at most \(maximumLength) bytes"))
        }
        return .success(EmailAddress(value: value))
    }

    private static func isPlausibleLocalPart(_ local: Substring) -> Bool {
        (1...64).contains(local.utf8.count) && !local.hasPrefix(".") && !local.hasSuffix(".") && !local.contains("..")
            && local.unicodeScalars.allSatisfy { !forbiddenInLocalPart.contains($0) }
    }

    /// `domain` in ASCII: each label in NFKC and lower case, as IDNA maps it (UTS #46), then a label with any other
    /// letter as `xn--` and its Punycode; letters, digits and inner hyphens only. Nil when it is no domain.
    static func asciiDomain(_ domain: String) -> String? {
        let mapped = domain.precomposedStringWithCompatibilityMapping.lowercased()
            .replacingOccurrences(of: "\u{3002}", with: ".")  // the ideographic full stop separates labels too
        let labels = mapped.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return nil }
        var ascii: [String] = []
        for label in labels {
            guard let encoded = label.unicodeScalars.allSatisfy(\.isASCII)
                ? String(label) : Punycode.encode(String(label)).map({ "xn--" + $0 })
            else { return nil }
            guard (1...63).contains(encoded.utf8.count), !encoded.hasPrefix("-"), !encoded.hasSuffix("-"),
                  encoded.unicodeScalars.allSatisfy({ letterDigitHyphen.contains($0) })
            else { return nil }
            ascii.append(encoded)
        }
        return ascii.joined(separator: ".")
    }

    private static let forbiddenInLocalPart = CharacterSet.whitespacesAndNewlines.union(.controlCharacters)
        .union(CharacterSet(charactersIn: "<>()[]\\,;:\"@"))
    private static let letterDigitHyphen = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789-")
}
