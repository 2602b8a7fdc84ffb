import Foundation
import NIOCore

/// A server's reply: its code and the text of each of its lines (`250-first`, `250 last`).
struct SMTPReply: Sendable, Equatable, CustomStringConvertible {
    var code: Int
    var lines: [String]

    var description: String { "\(code) \(lines.joined(separator: " | "))" }
}

/// The client's side of one SMTP session on a connected channel: a command out, a reply in, each failure told as an
/// ``SMTPError`` naming the step it happened in.
struct SMTPConversation {
    private var replies: NIOAsyncChannelInboundStream<String>.AsyncIterator
    private let output: NIOAsyncChannelOutboundWriter<ByteBuffer>

    init(_ inbound: NIOAsyncChannelInboundStream<String>, _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        replies = inbound.makeAsyncIterator()
        output = outbound
    }

    /// Sends `command` (none: only reads, for the greeting) and reads the reply, which must have one of the `expected`
    /// codes.
    @discardableResult
    mutating func exchange(_ command: String?, _ step: SMTPError.Step, expecting expected: Int...) async throws
        -> SMTPReply {
        if let command { try await write(command + "\r\n", step) }
        let reply = try await reply(step)
        guard expected.contains(reply.code) else { throw SMTPError(step, refusal: reply) }
        return reply
    }

    /// EHLO, and what the server offers in return.
    mutating func hello(_ name: String, _ step: SMTPError.Step = .hello) async throws -> SMTPCapabilities {
        SMTPCapabilities(try await exchange("EHLO \(name)", step, expecting: 250))
    }

    /// AUTH PLAIN, or LOGIN for servers that offer only that.
    mutating func authenticate(username: String, password: String, offered: Set<String>) async throws {
        func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        if offered.contains("PLAIN") {
            try await exchange("AUTH PLAIN " + base64("\0\(username)\0\(password)"), .authentication, expecting: 235)
        } else if offered.contains("LOGIN") {
            try await exchange("AUTH LOGIN", .authentication, expecting: 334)
            try await exchange(base64(username), .authentication, expecting: 334)
            try await exchange(base64(password), .authentication, expecting: 235)
        } else {
            throw SMTPError(.authentication, "the server offers neither AUTH PLAIN nor AUTH LOGIN")
        }
    }

    /// The message after DATA's 354: dot-stuffed (a line starting with "." gets another, which the server removes, so
    /// that it is not taken for the end) and ended by a line holding only ".".
    mutating func transmit(_ lines: [String]) async throws {
        let stuffed = lines.map { $0.hasPrefix(".") ? "." + $0 : $0 }
        try await exchange(stuffed.joined(separator: "\r\n") + "\r\n.", .content, expecting: 250)
    }

    private func write(_ text: String, _ step: SMTPError.Step) async throws {
        do {
            try await output.write(ByteBuffer(string: text))
        } catch {
            throw SMTPError(step, error)
        }
    }

    /// One reply, over as many lines as it takes: `250-` continues, `250 ` (or a bare `250`) ends.
    private mutating func reply(_ step: SMTPError.Step) async throws -> SMTPReply {
        var lines: [String] = []
        while true {
            let line: String?
            do {
                line = try await replies.next()
            } catch {
                throw SMTPError(step, error)
            }
            guard let line else { throw SMTPError(step, "the server closed the connection") }
            let separator = line.dropFirst(3).first
            guard let code = Int(line.prefix(3)), (200...599).contains(code), [nil, " ", "-"].contains(separator) else {
                throw SMTPError(step, "not an SMTP reply: \(line.prefix(80))")
            }
            lines.append(String(line.dropFirst(4)))
            if separator != "-" { return SMTPReply(code: code, lines: lines) }
        }
    }
}

/// What a server offers after EHLO, from the reply's lines after the first (which names the server).
struct SMTPCapabilities: Sendable {
    var startTLS = false
    var smtpUTF8 = false
    /// `AUTH PLAIN LOGIN`, or the older `AUTH=PLAIN LOGIN` that some servers still send.
    var authMechanisms: Set<String> = []

    init(_ reply: SMTPReply) {
        for line in reply.lines.dropFirst() {
            let words = line.uppercased().split(whereSeparator: { $0 == " " || $0 == "=" }).map(String.init)
            switch words.first {
            case "STARTTLS": startTLS = true
            case "SMTPUTF8": smtpUTF8 = true
            case "AUTH": authMechanisms.formUnion(words.dropFirst())
            default: break
            }
        }
    }
}

/// Splits what the server sends into lines, without their CRLF.
struct SMTPLineDecoder: NIOSingleStepByteToMessageDecoder {
    typealias InboundOut = String

    struct UnendedLine: Error, CustomStringConvertible {
        var description: String { "a reply line longer than 64 KiB" }
    }

    mutating func decode(buffer: inout ByteBuffer) throws -> String? {
        guard let end = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            // RFC 5321 keeps a reply line within 512 octets: far more without a line end is no SMTP server.
            guard buffer.readableBytes <= 64 * 1024 else { throw UnendedLine() }
            return nil
        }
        var line = buffer.readString(length: end - buffer.readerIndex)!
        buffer.moveReaderIndex(forwardBy: 1)
        if line.hasSuffix("\r") { line.removeLast() }
        return line
    }

    mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> String? {
        try decode(buffer: &buffer)
    }
}
