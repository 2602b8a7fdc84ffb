import Foundation

/// Text a user names things with (a device name, a preference value) and gets shown back in lists. Control characters
/// have no place in it, and U+0000 cannot even be stored: PostgreSQL's text and jsonb refuse it, which would turn a
/// client's mistake into a server error.
enum DisplayText {
    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) }
    }
}
