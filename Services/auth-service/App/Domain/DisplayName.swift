import Contracts
import Foundation

/// The name a user goes by in the apps (the flash cards' "Ana's flash cards"): text people type, so trimmed and kept in
/// NFC, on one line, at most ``ProfileUpdate/maximumDisplayNameLength`` characters, only the characters ``UserText``
/// calls unsafe refused. An empty name (or one of spaces) removes it.
enum DisplayName {
    enum Checked: Equatable {
        case set(String)
        case removed
        /// Naming `displayName`.
        case refused(FieldError)
    }

    static func checked(_ text: String) -> Checked {
        let name = UserText.normalized(text.trimmingCharacters(in: .whitespacesAndNewlines))
        if name.isEmpty { return .removed }
        if name.count > ProfileUpdate.maximumDisplayNameLength {
            return .refused(FieldError(field: "displayName",
                                       message: "must be at most \(ProfileUpdate.maximumDisplayNameLength) characters"))
        }
        if let unsafe = UserText.firstUnsafe(in: name) {
            return .refused(FieldError(field: "displayName",
                                       message: unsafe == "\n" ? "must be one line" : UserText.refusal(of: unsafe)))
        }
        return .set(name)
    }
}
