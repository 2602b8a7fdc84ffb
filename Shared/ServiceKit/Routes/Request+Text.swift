import Contracts
import Foundation
import Hummingbird

extension Request {
    /// The query parameter `name` as text a user typed: percent-decoded strictly (a value that is not UTF-8, or a
    /// broken escape, is the client's 400, not a search for U+FFFD), spaces collapsed, in NFC; nil when absent or
    /// blank. More than ``maximumTextParameterBytes``, a run of combining marks past UAX #15's bound, or a character
    /// ``UserText/firstUnsafe(in:allowingLineBreaks:)`` refuses is a 400 naming it.
    public func textParameter(_ name: String) throws -> String? {
        let prefix = Array((name + "=").utf8)
        for pair in (uri.query ?? "").utf8.split(separator: UInt8(ascii: "&")) where pair.starts(with: prefix) {
            // A `+` is a plus, as the router reads every other parameter: URLComponents (the apps' client) leaves
            // `C++` as it is, and a space arrives as %20.
            guard let bytes = Self.percentDecoded(Array(pair.dropFirst(prefix.count))), let text = String(validating: bytes, as: UTF8.self) else {
                throw ServiceProblem.validation([FieldError(field: name, message: "is not valid percent-encoded UTF-8")])
            }
            if let problem = UserText.sizeProblem(of: text, maximumBytes: Self.maximumTextParameterBytes) {
                throw ServiceProblem.validation([FieldError(field: name, message: problem)])
            }
            if let unsafe = UserText.firstUnsafe(in: text) {
                throw ServiceProblem.validation([FieldError(field: name, message: UserText.refusal(of: unsafe))])
            }
            let collapsed = UserText.normalized(text).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            return collapsed.isEmpty ? nil : collapsed
        }
        return nil
    }

    /// Far more than any search needs; the gateway's 8 KiB request line bounds it too, but not a direct caller.
    public static let maximumTextParameterBytes = 1024

    private static func percentDecoded(_ bytes: [UInt8]) -> [UInt8]? {
        var decoded: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                let byte = high << 4 | low
                decoded.append(byte)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return decoded
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
