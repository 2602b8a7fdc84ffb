/// Finds a top-level member's value in a JSON object's text without decoding the object: what lets an answer carry
/// a stored item's bytes as they are (``StoredChange``). The text is one the server wrote (an event's data), so the
/// scan only needs to be right for valid JSON; anything else finds nothing.
enum JSONText {
    /// The bytes of the value of `key` (a key without escapes) in the object `bytes`, if it has that member.
    static func valueRange(of key: String, in bytes: [UInt8]) -> Range<Int>? {
        let wanted = Array(key.utf8)
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            index = skipSpace(bytes, index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            guard let keyEnd = stringEnd(bytes, index) else { return nil }
            let name = bytes[(index + 1)..<(keyEnd - 1)]
            index = skipSpace(bytes, keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            let start = skipSpace(bytes, index + 1)
            guard let end = valueEnd(bytes, start) else { return nil }
            if name.elementsEqual(wanted) { return start..<end }
            index = skipSpace(bytes, end)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// The object `bytes` with the value at `range` (as ``valueRange(of:in:)`` found it) written as `null`: the rest
    /// of the object, to decode without that member's value.
    static func nulling(_ range: Range<Int>, in bytes: [UInt8]) -> String {
        String(decoding: bytes[..<range.lowerBound] + Array("null".utf8) + bytes[range.upperBound...], as: UTF8.self)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        return index
    }

    /// The index after the string that opens at `start` (a quote).
    private static func stringEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// The index after the value that starts at `start`.
    private static func valueEnd(_ bytes: [UInt8], _ start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return stringEnd(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(bytes, index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default: break
                }
                index += 1
            }
            return nil
        default:  // a number, true, false or null
            var index = start
            while index < bytes.count, bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}"),
                  bytes[index] != UInt8(ascii: "]"), !isSpace(bytes[index]) { index += 1 }
            return index
        }
    }
}
