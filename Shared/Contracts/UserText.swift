import Foundation

/// Text people type (a card's title, a device's name, a search), as every service takes it. Phones write emoji
/// sequences joined by U+200D, Persian with U+200C, and accents either composed or not: all of that is text, so only
/// what is truly unsafe is refused, and text is kept and compared in one form (NFC), so `Café` typed either way is one
/// word.
public enum UserText {
    /// `text` in Unicode's canonical composed form (NFC): how it is stored, compared and searched.
    public static func normalized(_ text: String) -> String {
        text.precomposedStringWithCanonicalMapping
    }

    /// The first character of `text` that has no place in it, if any: control characters (C0 and C1, U+0000 cannot
    /// even be stored by PostgreSQL), line breaks unless `allowingLineBreaks` (then only `\n`), and the bidirectional
    /// overrides and isolates, which can make a name read as another one in a list. Format characters otherwise (the
    /// joiners of emoji and of Persian words, variation selectors) are welcome.
    public static func firstUnsafe(in text: String, allowingLineBreaks: Bool = false) -> Unicode.Scalar? {
        text.unicodeScalars.first { scalar in
            if allowingLineBreaks, scalar == "\n" { return false }
            return scalar.properties.generalCategory == .control || bidiControls.contains(scalar.value)
                || bidiIsolates.contains(scalar.value)
        }
    }

    /// The message of a refusal of `scalar`: `must not contain U+202E (RIGHT-TO-LEFT OVERRIDE)`.
    public static func refusal(of scalar: Unicode.Scalar) -> String {
        let code = "U+" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4)
        let name = scalar.properties.name ?? scalar.properties.nameAlias
        return "must not contain \(code)" + (name.map { " (\($0))" } ?? "")
    }

    /// LRE, RLE, PDF, LRO, RLO and LRI, RLI, FSI, PDI.
    private static let bidiControls: ClosedRange<UInt32> = 0x202A...0x202E
    private static let bidiIsolates: ClosedRange<UInt32> = 0x2066...0x2069
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
