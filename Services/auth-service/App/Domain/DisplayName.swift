import Contracts
import Foundation

/// The name a user goes by in the apps (the flash cards' "Ana's flash cards"): text people type, taken as ``UserText``
/// takes all text (its size checked on the raw bytes first: at most four bytes a character), then trimmed, in NFC, on
/// one line, at most ``ProfileUpdate/maximumDisplayNameLength`` characters. An empty name (or one of spaces) removes it.
enum DisplayName {
    enum Checked: Equatable {
        case set(String)
        case removed
        /// Naming `displayName`.
        case refused(FieldError)
    }

    static func checked(_ text: String) -> Checked {
        let maximum = ProfileUpdate.maximumDisplayNameLength
        switch UserText.accepted(text, maximumCharacters: maximum, maximumBytes: 4 * maximum) {
        case .success(let name): return name.isEmpty ? .removed : .set(name)
        case .failure(let refusal): return .refused(FieldError(field: "displayName", message: refusal.message))
        }
    }
}
