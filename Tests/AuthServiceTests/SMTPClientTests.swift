@testable import AuthService
import Foundation
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// SMTPClient against a real SMTP server: `scripts/mail-server.py` (aiosmtpd), run by the Python of `MAIL_PYTHON` or
/// of the package's `.local/venv-mail` (scripts/test makes it). Each test reads what the server stored in its Maildir.
@Suite struct SMTPClientTests {
    static let sender = MailAddress(parsing: "FavoriteMe <no-reply@favoriteme.test>")!

    static func message(subject: String = "Reset your FavoriteMe password", text: String) -> MailMessage {
        MailMessage(from: sender, to: "ada@example.com", subject: subject, text: text)
    }

    @Test func plainSendStoresHeadersAndBodyAsSent() async throws {
        let link = "https://app.example.test/account/reset-password?token=AbC-123_xyz&x=%2F"
        try await withMailServer { server in
            let settings = SMTPSettings(host: "127.0.0.1", port: server.port)
            try await SMTPClient(settings: settings).send(Self.message(text: "Hello,\n\n\(link)\n\nBye\n"))

            let mail = try #require(server.mails().only)
            #expect(mail.raw.contains("\r\n\r\nHello,\r\n\r\n\(link)\r\n\r\nBye\r\n"))
            #expect(mail.raw.hasPrefix("Return-Path: <no-reply@favoriteme.test>\r\nDelivered-To: ada@example.com\r\n"))
            let parsed = try mail.parsed()
            #expect(parsed.defects == [])
            #expect(parsed.headers["From"] == "FavoriteMe <no-reply@favoriteme.test>")
            #expect(parsed.headers["To"] == "ada@example.com")
            #expect(parsed.headers["Subject"] == "Reset your FavoriteMe password")
            #expect(parsed.headers["Content-Transfer-Encoding"] == "7bit")
            #expect(try #require(parsed.headers["Message-ID"]).hasSuffix("@favoriteme.test>"))
            #expect(abs(try #require(parsed.date).timeIntervalSinceNow) < 600)
            #expect(parsed.body == "Hello,\n\n\(link)\n\nBye\n")
        }
    }

    @Test func dotsAtLineStartsArriveIntact() async throws {
        let text = ".leading dot\n..two dots\n.\nlast line\n"
        try await withMailServer { server in
            try await SMTPClient(settings: SMTPSettings(host: "127.0.0.1", port: server.port))
                .send(Self.message(text: text))
            let mail = try #require(server.mails().only)
            #expect(mail.raw.hasSuffix("\r\n\r\n.leading dot\r\n..two dots\r\n.\r\nlast line\r\n"))
            #expect(try mail.parsed().body == text)
        }
    }

    @Test func nonASCIISubjectNameAndBodyDecode() async throws {
        let subject = "Café ❤️ " + String(repeating: "très long ", count: 12)
        let text = "Bonjour Zoë ❤️\nA line that stays ASCII.\n"
        try await withMailServer { server in
            var message = Self.message(subject: subject, text: text)
            message.from.name = "FavoriteMe Café"
            try await SMTPClient(settings: SMTPSettings(host: "127.0.0.1", port: server.port)).send(message)

            let mail = try #require(server.mails().only)
            #expect(mail.raw.contains("Subject: =?utf-8?B?"))
            #expect(mail.raw.contains("Content-Transfer-Encoding: base64"))
            let longOrNotASCII = mail.raw.split(separator: "\r\n").filter { $0.utf8.count > 78 || !$0.allSatisfy(\.isASCII) }
            #expect(longOrNotASCII.isEmpty, "\(longOrNotASCII)")
            let parsed = try mail.parsed()
            #expect(parsed.defects == [])
            #expect(parsed.headers["Subject"] == subject)
            #expect(parsed.headers["From"] == "FavoriteMe Café <no-reply@favoriteme.test>")
            #expect(parsed.body == text)
        }
    }

    @Test func internationalizedRecipientUsesSMTPUTF8() async throws {
        try await withMailServer { server in
            var message = Self.message(text: "Hello\n")
            message.to = "élodie@exemple.fr"
            try await SMTPClient(settings: SMTPSettings(host: "127.0.0.1", port: server.port)).send(message)
            let mail = try #require(server.mails().only)
            #expect(mail.raw.contains("Delivered-To: élodie@exemple.fr\r\n"))
            #expect(try mail.parsed().headers["To"] == "élodie@exemple.fr")
        }
    }

    @Test func startTLSWithAuthDelivers() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try await withMailServer(certificate.serverOptions + ["--require-tls", "--auth", "mailer:s3cret"]) { server in
            var settings = SMTPSettings(host: "localhost", port: server.port, security: .requireStartTLS)
            (settings.username, settings.password) = ("mailer", "s3cret")
            settings.trustedCertificatesFile = certificate.certificate
            try await SMTPClient(settings: settings).send(Self.message(text: "Over TLS\n"))
            #expect(try server.mails().only?.parsed().body == "Over TLS\n")
        }
    }

    @Test func wrongPasswordIsAPermanentAuthFailure() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try await withMailServer(certificate.serverOptions + ["--auth", "mailer:s3cret"]) { server in
            var settings = SMTPSettings(host: "127.0.0.1", port: server.port)  // STARTTLS if offered; it is
            (settings.username, settings.password) = ("mailer", "wrong")
            settings.trustedCertificatesFile = certificate.certificate
            let error = try await #require(throws: SMTPError.self) {
                try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
            }
            #expect(error.step == .authentication && error.reply?.code == 535 && error.isPermanent, "\(error)")
            #expect(!error.description.contains("wrong"))
            #expect(server.mails().isEmpty)
        }
    }

    @Test func requiredStartTLSNotOfferedSendsNothing() async throws {
        try await withMailServer { server in
            let settings = SMTPSettings(host: "127.0.0.1", port: server.port, security: .requireStartTLS)
            let error = try await #require(throws: SMTPError.self) {
                try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
            }
            #expect(error.step == .startTLS && !error.isPermanent)
            #expect(server.mails().isEmpty)
        }
    }

    @Test func passwordIsNotSentWithoutTLS() async throws {
        try await withMailServer(["--auth", "mailer:s3cret"]) { server in
            var settings = SMTPSettings(host: "127.0.0.1", port: server.port)
            (settings.username, settings.password) = ("mailer", "s3cret")
            let error = try await #require(throws: SMTPError.self) {
                try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
            }
            #expect(error.step == .authentication && error.reply == nil)

            settings.security = .none  // plain text on purpose: this server takes AUTH without TLS
            try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
            #expect(server.mails().count == 1)
        }
    }

    @Test func untrustedCertificateIsRefused() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try await withMailServer(certificate.serverOptions) { server in
            let settings = SMTPSettings(host: "localhost", port: server.port)  // the system's roots only
            let error = try await #require(throws: SMTPError.self) {
                try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
            }
            #expect(error.step == .startTLS && !error.isPermanent)
            #expect(server.mails().isEmpty)
        }
    }

    @Test func nothingListeningIsTransientAndPrompt() async throws {
        let port = try await withMailServer { $0.port }  // free again once the server has stopped
        let settings = SMTPSettings(host: "127.0.0.1", port: port, timeout: .seconds(120))
        let started = ContinuousClock.now
        let error = try await #require(throws: SMTPError.self) {
            try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
        }
        #expect(error.step == .connect && !error.isPermanent)
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    @Test func silentServerTimesOut() async throws {
        // A server that accepts connections and never says a word.
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        defer { listener.close(promise: nil) }
        let settings = SMTPSettings(host: "127.0.0.1", port: try #require(listener.localAddress?.port),
                                    timeout: .seconds(1))
        let error = try await #require(throws: SMTPError.self) {
            try await SMTPClient(settings: settings).send(Self.message(text: "x\n"))
        }
        #expect(error.step == .greeting && !error.isPermanent)
        #expect(error.description.contains("no answer within"))
    }
}

// MARK: - The server

extension ReceivedMail {
    /// What Python's email package (policy.default: RFC 5322 and MIME, encoded-words decoded) reads in the mail.
    struct Parsed: Decodable {
        var headers: [String: String]
        var date: Date?
        var body: String
        var defects: [String]
    }

    func parsed() throws -> Parsed {
        let script = """
            import email, email.policy, json, sys
            m = email.message_from_binary_file(open(sys.argv[1], "rb"), policy=email.policy.default)
            date = m["Date"].datetime if m["Date"] else None
            print(json.dumps({"headers": {k: str(v) for k, v in m.items()},
                              "date": date.timestamp() if date else None,
                              "body": m.get_content().replace("\\r\\n", "\\n"),
                              "defects": [repr(d) for d in m.defects] + [repr(d) for v in m.values() for d in v.defects]}))
            """
        let output = try runProgram(MailServer.python, ["-c", script, file.path])
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(Parsed.self, from: Data(output.utf8))
    }
}

/// Runs `body` with a fresh server, and stops it however `body` ends; the server must exit cleanly (status 0).
func withMailServer<Value>(_ options: [String] = [], _ body: (MailServer) async throws -> Value) async throws
    -> Value {
    let server = try await MailServer.start(arguments: options)
    defer { #expect(server.stop() == 0, "mail-server.py exits 0 on SIGTERM") }
    return try await body(server)
}

/// A self-signed certificate for `localhost` and 127.0.0.1 (and its key), made with `openssl` in a directory of its own.
struct TestCertificate {
    let directory: URL
    var certificate: String { directory.appendingPathComponent("server.crt").path }
    var key: String { directory.appendingPathComponent("server.key").path }
    var serverOptions: [String] { ["--tls-cert", certificate, "--tls-key", key] }

    init() throws {
        directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("favoriteme-smtp-tls-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = try runProgram("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", key, "-out", certificate,
        ])
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

private extension Array {
    /// The element of a one-element array.
    var only: Element? { count == 1 ? first : nil }
}
