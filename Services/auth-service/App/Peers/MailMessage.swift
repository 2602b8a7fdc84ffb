import Foundation

/// A mail address and the name shown with it: `FavoriteMe <no-reply@example.com>`.
struct MailAddress: Sendable, Equatable {
    var name: String?
    var address: String
}

extension MailAddress {
    /// Reads `Name <address>`, `"Name" <address>` or a bare address; nil when there is no address we can send with.
    init?(parsing text: String) {
        let text = text.trimmingCharacters(in: .whitespaces)
        if text.hasSuffix(">"), let open = text.lastIndex(of: "<") {
            var name = text[..<open].trimmingCharacters(in: .whitespaces)
            if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") { name = String(name.dropFirst().dropLast()) }
            let address = text[text.index(after: open)..<text.index(before: text.endIndex)]
            self.init(name: name.isEmpty ? nil : name, address: String(address))
        } else {
            self.init(name: nil, address: text)
        }
        guard Self.isUsable(address) else { return nil }
    }

    /// `local@domain` without spaces, controls, or the characters that would end an SMTP command or a header early.
    /// Quoted local parts are not supported: we send to addresses that people typed into a sign-up form, and to our
    /// own. Non-ASCII ones need a server that offers SMTPUTF8.
    static func isUsable(_ address: String) -> Bool {
        guard let at = address.lastIndex(of: "@"), at != address.startIndex, address.index(after: at) != address.endIndex
        else { return false }
        return address.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                ? (33...126).contains(scalar.value) && !"<>()[]\\,;:\"".unicodeScalars.contains(scalar)
                : !scalar.properties.isWhitespace && scalar.properties.generalCategory != .control
        }
    }
}

/// A plain-text mail to one recipient.
struct MailMessage: Sendable, Equatable {
    var from: MailAddress
    var to: String
    var subject: String
    /// Lines end with "\n" (a "\r\n" or a lone "\r" is read as one too); they go out with CRLF.
    var text: String
}

extension MailMessage {
    /// The message in RFC 5322 form with MIME headers, as lines without their CRLF (neither dot-stuffed nor ended by
    /// "."; SMTP's DATA does that). All is 7-bit, so that no server needs 8BITMIME, but for internationalized
    /// addresses, which only go to servers that offer SMTPUTF8.
    func lines(date: Date, messageID: String = UUID().uuidString.lowercased()) -> [String] {
        let domain = from.address.split(separator: "@").last.map(String.init) ?? "localhost"
        let name = from.name.map { Self.isPlainHeaderText($0) ? [Self.quoted($0)] : Self.encodedWords($0) } ?? []
        let header = Self.field("From", name + ["<\(from.address)>"]) + ["To: \(to)"]
            + Self.field("Subject", Self.isPlainHeaderText(subject) ? [subject] : Self.encodedWords(subject))
            + ["Date: \(Self.dateFormat(date))", "Message-ID: <\(messageID)@\(domain)>", "MIME-Version: 1.0",
               "Content-Type: text/plain; charset=utf-8"]
        let body = Self.bodyLines(text)
        // 7bit allows ASCII (no NUL) in lines of at most 998 octets; anything else is sent as base64.
        if body.allSatisfy({ $0.utf8.count <= 998 && $0.unicodeScalars.allSatisfy { (1...127).contains($0.value) } }) {
            return header + ["Content-Transfer-Encoding: 7bit", ""] + body
        }
        // Base64 encodes the canonical form of text, with CRLF line ends, in lines of 76 characters.
        let encoded = Array(Data(body.map { $0 + "\r\n" }.joined().utf8).base64EncodedString().utf8)
        return header + ["Content-Transfer-Encoding: base64", ""] + stride(from: 0, to: encoded.count, by: 76).map {
            String(decoding: encoded[$0..<min($0 + 76, encoded.count)], as: UTF8.self)
        }
    }

    private static func bodyLines(_ text: String) -> [String] {
        // "\r\n" is one Character in Swift, so splitting at "\n" alone would leave it whole.
        var lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
            .map(String.init)
        if lines.count > 1, lines.last == "" { lines.removeLast() }  // the final line end, not an empty line
        return lines
    }

    /// Printable ASCII, short enough for one line, that a decoder will not take for an encoded-word.
    private static func isPlainHeaderText(_ text: String) -> Bool {
        text.utf8.count <= 900 && text.unicodeScalars.allSatisfy { (32...126).contains($0.value) } && !text.contains("=?")
    }

    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// "Name: word word", folded between words (the words themselves stay whole) to keep lines within 78 characters.
    private static func field(_ name: String, _ words: [String]) -> [String] {
        var lines = ["\(name):"]
        for word in words {
            if lines[lines.count - 1].count + 1 + word.count > 78, lines[lines.count - 1] != "\(name):" {
                lines.append("")
            }
            lines[lines.count - 1] += " " + word
        }
        return lines
    }

    /// RFC 2047 encoded-words (UTF-8, base64), each at most 64 characters (the limit is 75) and holding whole
    /// characters only.
    private static func encodedWords(_ text: String) -> [String] {
        var words: [String] = []
        var pending: [UInt8] = []
        for scalar in text.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            // 39 bytes make 52 base64 characters, 64 with the markers: room for "Subject: " on the first line.
            if pending.count + bytes.count > 39 {
                words.append("=?utf-8?B?\(Data(pending).base64EncodedString())?=")
                pending = []
            }
            pending += bytes
        }
        return words + ["=?utf-8?B?\(Data(pending).base64EncodedString())?="]
    }

    /// RFC 5322's date, in UTC: "Tue, 05 May 2026 09:30:00 +0000".
    private static func dateFormat(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        return formatter.string(from: date)
    }
}
