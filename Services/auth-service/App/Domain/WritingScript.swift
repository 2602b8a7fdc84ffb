/// The writing system a letter belongs to, as far as telling look-alike addresses apart needs: `раypal` (Cyrillic р
/// and а among Latin letters) reads as `paypal` but is another mailbox. Swift has no Unicode Script property on
/// Linux, so the scripts people write addresses in are listed by their blocks; any other letter counts by its
/// 128-code-point block, which keeps two unknown scripts apart too.
enum WritingScript: Hashable, Sendable {
    case latin, greek, cyrillic, armenian, hebrew, arabic, devanagari, bengali, tamil, thai, georgian, hangul
    case han, hiragana, katakana, bopomofo
    case other(block: UInt32)

    /// The script of `scalar` when it is a letter; nil for digits, punctuation and marks, which go with any script
    /// (Unicode's Common and Inherited).
    init?(_ scalar: Unicode.Scalar) {
        guard scalar.properties.isAlphabetic, !Self.isMark(scalar) else { return nil }
        let value = scalar.value
        if let listed = Self.ranges.first(where: { $0.range.contains(value) }) {
            self = listed.script
        } else {
            self = .other(block: value >> 7)
        }
    }

    /// Whether the letters of `text` come from more than one script. Latin may go with Han, Hiragana, Katakana,
    /// Hangul and Bopomofo, and Han with the Japanese kana, Hangul or Bopomofo, as people write those languages
    /// (UTS #39's "highly restrictive" level); any other pair is a mix.
    static func isMixed(_ text: String) -> Bool {
        let scripts = Set(text.unicodeScalars.compactMap(WritingScript.init))
        return scripts.count > 1 && !writtenTogether.contains { scripts.isSubset(of: $0) }
    }

    private static let writtenTogether: [Set<WritingScript>] = [
        [.latin, .han, .hiragana, .katakana], [.latin, .han, .hangul], [.latin, .han, .bopomofo],
    ]

    private static func isMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: true
        default: false
        }
    }

    private static let ranges: [(range: ClosedRange<UInt32>, script: WritingScript)] = [
        (0x0041...0x024F, .latin), (0x1E00...0x1EFF, .latin), (0x2C60...0x2C7F, .latin), (0xA720...0xA7FF, .latin),
        (0xAB30...0xAB6F, .latin), (0xFF21...0xFF5A, .latin),
        (0x0370...0x03FF, .greek), (0x1F00...0x1FFF, .greek),
        (0x0400...0x052F, .cyrillic), (0x1C80...0x1C8F, .cyrillic), (0x2DE0...0x2DFF, .cyrillic),
        (0xA640...0xA69F, .cyrillic),
        (0x0530...0x058F, .armenian), (0x0590...0x05FF, .hebrew),
        (0x0600...0x06FF, .arabic), (0x0750...0x077F, .arabic), (0x08A0...0x08FF, .arabic),
        (0x0900...0x097F, .devanagari), (0x0980...0x09FF, .bengali), (0x0B80...0x0BFF, .tamil),
        (0x0E00...0x0E7F, .thai), (0x10A0...0x10FF, .georgian), (0x1C90...0x1CBF, .georgian),
        (0x1100...0x11FF, .hangul), (0x3130...0x318F, .hangul), (0xAC00...0xD7AF, .hangul),
        (0x2E80...0x2FDF, .han), (0x3005...0x3007, .han), (0x3400...0x4DBF, .han), (0x4E00...0x9FFF, .han),
        (0xF900...0xFAFF, .han), (0x20000...0x3FFFF, .han),
        (0x3040...0x309F, .hiragana), (0x30A0...0x30FF, .katakana), (0x31F0...0x31FF, .katakana),
        (0x3100...0x312F, .bopomofo), (0x31A0...0x31BF, .bopomofo),
    ]
}
