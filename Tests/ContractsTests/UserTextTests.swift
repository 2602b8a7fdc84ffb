import Contracts
import Foundation
import Testing

/// Text as phones write it: what is kept, what is refused and how a refusal names it.
@Suite struct UserTextTests {
    static let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466} Family"
    static let coder = "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB} Coding"
    /// "I want" in Persian: the zero-width non-joiner keeps می and خواهم apart without a space.
    static let persian = "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}"

    @Test(arguments: [family, coder, persian, "Café", "Cafe\u{301}", "Line one\nLine two"])
    func textPhonesWriteIsKept(_ text: String) {
        #expect(UserText.firstUnsafe(in: text, allowingLineBreaks: true) == nil)
    }

    @Test func oneWordInEitherFormIsOneText() {
        let composed = "Caf\u{E9}", decomposed = "Cafe\u{301}"
        #expect(Array(composed.unicodeScalars) != Array(decomposed.unicodeScalars))
        #expect(Array(UserText.normalized(decomposed).unicodeScalars) == Array(composed.unicodeScalars))
        #expect(UserText.normalized(Self.family) == Self.family)  // emoji sequences are already composed
    }

    @Test func controlsBreaksAndBidiOverridesAreRefusedByName() {
        #expect(UserText.firstUnsafe(in: "a\u{0}b") == "\u{0}")
        #expect(UserText.firstUnsafe(in: "two\nlines") == "\n")
        #expect(UserText.firstUnsafe(in: "two\nlines", allowingLineBreaks: true) == nil)
        #expect(UserText.firstUnsafe(in: "tab\tbed", allowingLineBreaks: true) == "\t")
        #expect(UserText.firstUnsafe(in: "c1\u{85}") == "\u{85}")
        // "invoice_\u{202E}fdp.exe" reads as "invoice_exe.pdf" in a list.
        #expect(UserText.firstUnsafe(in: "invoice_\u{202E}fdp.exe") == "\u{202E}")
        #expect(UserText.firstUnsafe(in: "\u{2066}isolated\u{2069}") == "\u{2066}")
        #expect(UserText.refusal(of: "\u{202E}") == "must not contain U+202E (RIGHT-TO-LEFT OVERRIDE)")
        #expect(UserText.refusal(of: "\u{7}").hasPrefix("must not contain U+0007"))
    }
}
