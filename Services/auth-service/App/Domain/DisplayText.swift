/// Text a user names things with (a device name, a preference value) and gets shown back in lists. Control characters
/// have no place in it, and U+0000 cannot even be stored: PostgreSQL's text and jsonb refuse it, which would turn a
/// client's mistake into a server error.
enum DisplayText {
    /// General category Cc only (U+0000–U+001F, U+007F–U+009F); format characters such as the zero-width joiner
    /// inside emoji sequences are welcome.
    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
