import Foundation

/// An email address in the one form we store and compare: trimmed, Unicode NFC, lower case.
///
/// Lower-casing the local part is a deliberate choice: no mainstream provider treats `Ana@` and `ana@` as two
/// mailboxes, and two accounts differing only in case would be a support and phishing hazard.
struct EmailAddress: Equatable, Sendable, CustomStringConvertible {
    let value: String
    var description: String { value }

    static let maximumLength = 254
    static let invalidMessage = "must be an email address such as name@example.com"

    /// Nil when `raw` is not a plausible address (the mailbox is proven only by mail, which we do not send).
    init?(normalizing raw: String) {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping.lowercased()
        guard text.utf8.count <= Self.maximumLength else { return nil }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let local = parts[0], domain = parts[1]
        guard (1...64).contains(local.utf8.count), !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..")
        else { return nil }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 63 }),
              labels.allSatisfy({ !$0.hasPrefix("-") && !$0.hasSuffix("-") })
        else { return nil }
        let forbidden = CharacterSet.whitespacesAndNewlines.union(.controlCharacters)
            .union(CharacterSet(charactersIn: "<>()[]\\,;:\"@"))
        guard local.unicodeScalars.allSatisfy({ !forbidden.contains($0) }),
              domain.unicodeScalars.allSatisfy({ !forbidden.contains($0) })
        else { return nil }
        value = text
    }
}
