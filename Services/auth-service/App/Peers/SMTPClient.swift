import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Where and how to hand mail over: a submission server (or the dev stack's `scripts/mail-server.py`).
struct SMTPSettings: Sendable {
    enum Security: String, Sendable, CaseIterable {
        /// Plain text all along, AUTH included: for a server on the same host or network only.
        case none
        /// STARTTLS when the server offers it, plain text otherwise (but never AUTH in plain text).
        case startTLSIfOffered = "starttls-if-offered"
        /// STARTTLS or nothing: a server that does not offer it gets no mail.
        case requireStartTLS = "starttls"
    }

    var host: String
    var port: Int
    var security: Security = .startTLSIfOffered
    var username: String? = nil
    var password: String? = nil
    /// PEM certificates trusted as roots besides the system's: a private CA, or a dev server's self-signed certificate.
    var trustedCertificatesFile: String? = nil
    /// The name we EHLO with.
    var heloName = "localhost"
    /// The deadline of a whole send, from connecting to the server's acceptance of the message.
    var timeout: Duration = .seconds(30)
}

extension SMTPSettings: CustomStringConvertible {
    /// Everything but the password, so that printing the settings (or a configuration holding them) cannot leak it.
    var description: String {
        "SMTPSettings(\(host):\(port), \(security.rawValue), user: \(username ?? "none"), CA file: "
            + "\(trustedCertificatesFile ?? "none"), EHLO \(heloName), timeout \(timeout))"
    }
}

/// Why a mail was not handed over.
struct SMTPError: Error, CustomStringConvertible {
    enum Step: String, Sendable {
        case connect = "connect", greeting = "greeting", hello = "EHLO", startTLS = "STARTTLS", authentication = "AUTH"
        case sender = "MAIL FROM", recipient = "RCPT TO", data = "DATA", content = "message content", quit = "QUIT"
    }

    var step: Step
    /// The server's refusal; nil when the failure was not a reply (network, TLS, timeout, what we would not send).
    var reply: SMTPReply?
    var detail: String
    /// Retrying will not help: the server refused for good (a 5xx reply), or the mail cannot be sent as it is.
    var isPermanent: Bool

    var description: String { "SMTP failed at \(step.rawValue): \(detail)" }

    init(_ step: Step, refusal reply: SMTPReply) {
        self.step = step
        self.reply = reply
        detail = reply.description
        isPermanent = (500...599).contains(reply.code)
    }

    init(_ step: Step, _ detail: String, isPermanent: Bool = false) {
        self.step = step
        self.detail = detail
        self.isPermanent = isPermanent
    }

    init(_ step: Step, _ error: any Error) {
        self.init(step, String(describing: error))
    }
}

/// Hands mails to an SMTP server, one connection per mail: enough for account mails, and nothing to keep alive.
struct SMTPClient: Sendable {
    let settings: SMTPSettings
    let eventLoopGroup: any EventLoopGroup

    init(settings: SMTPSettings, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.settings = settings
        self.eventLoopGroup = eventLoopGroup
    }

    /// One connection per call: EHLO, STARTTLS when offered/required (then EHLO again), AUTH when credentials are set,
    /// MAIL FROM, RCPT TO, DATA, QUIT. Returns once the server has accepted the message.
    func send(_ message: MailMessage) async throws {
        // Checked before connecting: these would fail on every attempt.
        guard MailAddress.isUsable(message.from.address) else {
            throw SMTPError(.sender, "not an address we can send from: \(message.from.address)", isPermanent: true)
        }
        guard MailAddress.isUsable(message.to) else {
            throw SMTPError(.recipient, "not an address we can send to", isPermanent: true)
        }
        let deadline = NIODeadline.now() + TimeAmount(settings.timeout)
        let channel: NIOAsyncChannel<String, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: eventLoopGroup)
                .connectTimeout(TimeAmount(settings.timeout))
                .connect(host: settings.host, port: settings.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SMTPLineDecoder()))
                        return try NIOAsyncChannel<String, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw SMTPError(.connect, error)
        }
        // The deadline closes the channel, which ends whatever read or write is waiting.
        let expiry = channel.channel.eventLoop.scheduleTask(deadline: deadline) { channel.channel.close(promise: nil) }
        defer { expiry.cancel() }
        do {
            try await channel.executeThenClose { inbound, outbound in
                var conversation = SMTPConversation(inbound, outbound)
                try await converse(&conversation, on: channel.channel, message: message)
            }
        } catch let error as SMTPError where error.reply == nil && NIODeadline.now() >= deadline {
            throw SMTPError(error.step, "no answer within \(settings.timeout)")
        } catch where Task.isCancelled {
            throw CancellationError()
        }
    }

    private func converse(_ smtp: inout SMTPConversation, on channel: any Channel, message: MailMessage) async throws {
        try await smtp.exchange(nil, .greeting, expecting: 220)
        var offers = try await smtp.hello(settings.heloName)
        var encrypted = false
        if settings.security != .none, offers.startTLS {
            try await smtp.exchange("STARTTLS", .startTLS, expecting: 220)
            try await startTLS(on: channel)
            // RFC 3207: what the server offered in plain text may have been tampered with; ask again.
            offers = try await smtp.hello(settings.heloName, .startTLS)
            encrypted = true
        } else if settings.security == .requireStartTLS {
            throw SMTPError(.startTLS, "the server does not offer STARTTLS, and the settings require it")
        }
        if let username = settings.username, let password = settings.password {
            // With `starttls-if-offered`, a server (or someone on the way) that stops offering STARTTLS must not get
            // the password in plain text: only `none` says that plain text is fine.
            guard encrypted || settings.security == .none else {
                throw SMTPError(.authentication, "no STARTTLS, and the password is not sent unencrypted")
            }
            try await smtp.authenticate(username: username, password: password, offered: offers.authMechanisms)
        }
        // An internationalized address (RFC 6531) goes only to a server that offers to take it.
        let international = !(message.from.address + message.to).unicodeScalars.allSatisfy(\.isASCII)
        guard !international || offers.smtpUTF8 else {
            throw SMTPError(.recipient, "the server takes no internationalized address (SMTPUTF8)", isPermanent: true)
        }
        try await smtp.exchange("MAIL FROM:<\(message.from.address)>" + (international ? " SMTPUTF8" : ""), .sender,
                                expecting: 250)
        try await smtp.exchange("RCPT TO:<\(message.to)>", .recipient, expecting: 250, 251)
        try await smtp.exchange("DATA", .data, expecting: 354)
        try await smtp.transmit(message.lines(date: Date()))
        // The server has the mail: a failed goodbye must not make the caller send it again.
        _ = try? await smtp.exchange("QUIT", .quit, expecting: 221)
    }

    /// Puts TLS in front of the pipeline, after the server's 220 to STARTTLS. The certificate is verified against the
    /// system's roots and those of `trustedCertificatesFile`, and against the host name (or IP address) we connected to.
    private func startTLS(on channel: any Channel) async throws {
        do {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let file = settings.trustedCertificatesFile {
                configuration.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(file))]
            }
            let context = try NIOSSLContext(configuration: configuration)
            // SNI takes names only; without one, NIOSSL checks the certificate against the peer's IP address.
            let isAddress = (try? SocketAddress(ipAddress: settings.host, port: 0)) != nil
            let serverName = isAddress ? nil : settings.host
            try await channel.eventLoop.submit {
                let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
            }.get()
        } catch {
            throw SMTPError(.startTLS, error)
        }
    }
}
