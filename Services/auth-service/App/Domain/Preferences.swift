import Contracts
import Foundation

/// The app's free-form settings stored with the account (a default category, say): bounded so that an account
/// cannot become a storage bucket.
enum Preferences {
    static let maximumCount = 32
    static let maximumValueLength = 256
    /// The same bound in UTF-8 bytes, checked first (four a character).
    static let maximumValueBytes = 1024
    /// The preference that names one of the experience's categories (the list the app opens on), checked against the
    /// catalog's categories.
    static let defaultCategoryKey = "defaultCategory"

    /// The patch to apply when a request moves an account from experience `current` to `new` (nil: it keeps it). A
    /// default category names a category of one experience (a Ticketmaster segment is no NYT list), so a move clears
    /// it, unless the same request sets one (which is then checked against the new experience).
    static func patch(_ patch: [String: String?]?, movingFrom current: ExperienceID, to new: ExperienceID?)
        -> [String: String?]?
    {
        guard let new, new != current, patch?[defaultCategoryKey] == nil else { return patch }
        var cleared = patch ?? [:]
        cleared[defaultCategoryKey] = .some(nil)
        return cleared
    }

    /// `stored` with `patch` merged in (RFC 7396: a nil value removes the key), or the field errors that refuse it.
    static func merge(_ patch: [String: String?], into stored: [String: String]) -> Result<[String: String], Problems> {
        var errors: [FieldError] = []
        var merged = stored
        for (key, value) in patch.sorted(by: { $0.key < $1.key }) {
            guard isValidKey(key) else {
                errors.append(FieldError(field: "preferences.\(key)",
                                         message: "keys are 1 to 40 letters or digits, starting with a letter"))
                continue
            }
            if let value {
                switch UserText.accepted(value, maximumCharacters: maximumValueLength, maximumBytes: maximumValueBytes) {
                case .success(let accepted): merged[key] = accepted
                case .failure(let refusal): errors.append(FieldError(field: "preferences.\(key)", message: refusal.message))
                }
            } else {
                merged[key] = nil
            }
        }
        if errors.isEmpty, merged.count > maximumCount {
            errors.append(FieldError(field: "preferences", message: "at most \(maximumCount) keys"))
        }
        return errors.isEmpty ? .success(merged) : .failure(Problems(errors: errors))
    }

    struct Problems: Error, Equatable { var errors: [FieldError] }

    static func isValidKey(_ key: String) -> Bool {
        guard (1...40).contains(key.utf8.count), let first = key.unicodeScalars.first,
              CharacterSet.letters.contains(first) else { return false }
        return key.unicodeScalars.allSatisfy { $0.isASCII && CharacterSet.alphanumerics.contains($0) }
    }
}
