import Foundation

/// Text people type (a card's title, a device's name, a search), as every service takes it. Phones write emoji
/// sequences joined by U+200D, Persian with U+200C, and accents either composed or not: all of that is text, so only
/// what is truly unsafe is refused, and text is kept and compared in one form (NFC), so `Café` typed either way is one
/// word.
public enum UserText {
    /// `text` in Unicode's canonical composed form (NFC): how it is stored, compared and searched. Call it only on
    /// text ``sizeProblem(of:maximumBytes:)`` passed: normalising reorders each run of combining marks, which costs
    /// the square of the run's length.
    public static func normalized(_ text: String) -> String {
        text.precomposedStringWithCanonicalMapping
    }

    /// The most combining marks (non-starters) in a row: UAX #15's stream-safe text format. No language needs more;
    /// past it, one "character" can weigh a megabyte and normalising it takes seconds.
    public static let longestCombiningRun = 30

    /// Why `raw` is refused before anything else looks at it, or nil: more than `maximumBytes` of UTF-8, or a run of
    /// more than ``longestCombiningRun`` combining marks. Both are read off the bytes and scalars in one pass, so a
    /// hostile input costs no more than its length; trimming, normalising, counting characters and hashing come after.
    public static func sizeProblem(of raw: String, maximumBytes: Int) -> String? {
        if raw.utf8.count > maximumBytes { return "must be at most \(maximumBytes) bytes (UTF-8)" }
        var run = 0
        for scalar in raw.unicodeScalars {
            run = scalar.properties.canonicalCombiningClass == .notReordered ? 0 : run + 1
            if run > longestCombiningRun {
                return "must not have more than \(longestCombiningRun) combining marks in a row"
            }
        }
        return nil
    }

    /// `raw` as a field keeps it: within `maximumBytes` and stream-safe (checked first, on the raw bytes), then
    /// trimmed, in NFC, at most `maximumCharacters` characters and free of what ``firstUnsafe(in:allowingLineBreaks:)``
    /// refuses. Empty text is accepted: whether a field may be empty is the caller's rule.
    public static func accepted(_ raw: String, maximumCharacters: Int, maximumBytes: Int,
                                allowingLineBreaks: Bool = false) -> Result<String, Refusal> {
        if let problem = sizeProblem(of: raw, maximumBytes: maximumBytes) { return .failure(Refusal(message: problem)) }
        let text = normalized(raw.trimmingCharacters(in: .whitespacesAndNewlines))
        if text.count > maximumCharacters {
            return .failure(Refusal(message: "must be at most \(maximumCharacters) characters"))
        }
        if let unsafe = firstUnsafe(in: text, allowingLineBreaks: allowingLineBreaks) {
            return .failure(Refusal(message: refusal(of: unsafe)))
        }
        return .success(text)
    }

    /// Why a field's text was refused: the message of its ``FieldError``.
    public struct Refusal: Error, Equatable, Sendable {
        public var message: String

        public init(message: String) { self.message = message }
    }

    /// Text from a source we do not control, made safe to keep without refusing it: cut to `maximumBytes` on a
    /// character boundary, and any combining mark past ``longestCombiningRun`` in a row dropped.
    public static func bounded(_ text: String, maximumBytes: Int) -> String {
        var kept = String.UnicodeScalarView()
        var bytes = 0, run = 0
        for scalar in text.unicodeScalars {
            run = scalar.properties.canonicalCombiningClass == .notReordered ? 0 : run + 1
            if run > longestCombiningRun { continue }
            bytes += UTF8.width(scalar)
            if bytes > maximumBytes { break }
            kept.append(scalar)
        }
        return String(kept)
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

    /// The message of a refusal of `scalar`: `must not contain U+202E (RIGHT-TO-LEFT OVERRIDE)`, or `must be one line`.
    public static func refusal(of scalar: Unicode.Scalar) -> String {
        if scalar == "\n" { return "must be one line" }
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
