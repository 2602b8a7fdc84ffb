@testable import PostgresValues
import Testing

@Suite struct ErrorMaskingTests {
    /// Values the server quotes in a message never reach a log, even when they hold quotes themselves.
    @Test(arguments: [
        (#"invalid input syntax for type integer: "12a""#, #"invalid input syntax for type integer: "…""#),
        (#"invalid input syntax for type uuid: "1" OR "2""#, #"invalid input syntax for type uuid: "…""#),
        (#"unterminated: "secret"#, #"unterminated: "…"#),
        ("no quotes at all ", "no quotes at all"),
    ])
    func quotedInputIsMasked(message: String, masked: String) {
        #expect(PostgresError.maskQuoted(message) == masked)
    }
}
