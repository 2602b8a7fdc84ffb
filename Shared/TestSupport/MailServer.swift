import Foundation

/// The project's SMTP server (`scripts/mail-server.py`, on PyPI's aiosmtpd) as a test runs it: a real server on
/// loopback that keeps every mail it accepts as a file in a Maildir of the test's own. The interpreter is `MAIL_PYTHON`
/// (scripts/test installs aiosmtpd in a venv and sets it), else the venv's usual place in the package.
public final class MailServer: Sendable {
    public let port: Int
    /// Where accepted mails land, one file each (the Maildir's `new/`).
    public let inbox: URL
    private let processID: pid_t

    /// Starts a server on `port` (0: a free one) with the options of `scripts/mail-server.py` in `arguments`, storing
    /// into `maildir` (a fresh temporary one by default: a restarted server can be given the same).
    public static func start(port: Int = 0, maildir: URL? = nil, arguments: [String] = []) async throws -> MailServer {
        let maildir = maildir ?? URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("favoriteme-mail-\(getpid())-\(UUID().uuidString.prefix(8))")
        // The server makes the Maildir (and its tmp/, new/, cur/) itself.
        let log = maildir.appendingPathExtension("log").path
        FileManager.default.createFile(atPath: log, contents: nil)
        let pid = try spawnProgram(python, [script, "--port", String(port), "--maildir", maildir.path] + arguments,
                                   outputPath: log)
        let deadline = ContinuousClock.now + .seconds(60)  // a busy machine starts Python slowly; a poll, not a wait
        while ContinuousClock.now < deadline {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = output.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
               let listening = line.split(separator: ":").last.flatMap({ Int($0) }) {
                return MailServer(port: listening, inbox: maildir.appendingPathComponent("new"), processID: pid)
            }
            if kill(pid, 0) != 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(pid, SIGTERM)
        reap(pid)
        throw TestSupportError("the mail server did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    private init(port: Int, inbox: URL, processID: pid_t) {
        self.port = port
        self.inbox = inbox
        self.processID = processID
    }

    /// Ends the server (SIGTERM; SIGKILL if it is still there 10 seconds later) and returns its wait status: 0 when
    /// it exited cleanly.
    @discardableResult
    public func stop() -> Int32 {
        kill(processID, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 {
            if waitpid(processID, &status, WNOHANG) == processID { return status }
            usleep(100_000)
        }
        kill(processID, SIGKILL)
        waitpid(processID, &status, 0)
        return status
    }

    /// Every mail received so far, oldest first.
    public func mails() -> [ReceivedMail] { ReceivedMail.all(in: inbox) }

    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static var script: String { root.appendingPathComponent("scripts/mail-server.py").path }
    /// The Python that runs the server (and has aiosmtpd).
    public static var python: String {
        ProcessInfo.processInfo.environment["MAIL_PYTHON"] ?? root.appendingPathComponent(".local/venv-mail/bin/python").path
    }
}

/// One mail as a Maildir file holds it: byte for byte as the client sent it (CRLF line ends), below the server's
/// `Return-Path` and `Delivered-To`.
public struct ReceivedMail: Sendable {
    public let file: URL
    public let raw: String
    /// `raw` with `\n` line ends, which the accessors below read.
    private var text: String { raw.replacingOccurrences(of: "\r\n", with: "\n") }

    /// The mails of a Maildir's `new/` folder, oldest first.
    public static func all(in inbox: URL) -> [ReceivedMail] {
        let files = (try? FileManager.default.contentsOfDirectory(at: inbox, includingPropertiesForKeys: [
            .contentModificationDateKey,
        ])) ?? []
        return files.compactMap { file -> (Date, ReceivedMail)? in
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
            let modified = (try? file.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate
            return (modified ?? .distantPast, ReceivedMail(file: file, raw: text))
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The value of the first header `name` (any letter case).
    public func header(_ name: String) -> String? {
        let head = text.components(separatedBy: "\n\n").first ?? ""
        for line in head.split(separator: "\n") where line.lowercased().hasPrefix(name.lowercased() + ":") {
            return line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return nil
    }

    public var body: String {
        let text = text
        guard let range = text.range(of: "\n\n") else { return "" }
        return String(text[range.upperBound...])
    }

    /// The first link in the body.
    public var link: URL? {
        body.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("http://") || $0.hasPrefix("https://") }
            .flatMap { URL(string: String($0)) }
    }
}
