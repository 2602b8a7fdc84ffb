import Foundation
import TestSupport
import Testing

extension EndToEnd {
    /// One user's journey through `favme`, the command-line client, as a person types it: sign up, verify from the
    /// mail, search, heart, list, unheart while a second device watches, sign out, forget the password and reset it
    /// from the mail. Each step's human output and its `--json` output are checked, and the files favme keeps: 0600 in
    /// 0700 directories, and nothing else (a stray copy of the session or of the favorites would be a leak).
    @Suite struct FavmeJourneyTests {
        @Test func aUserGoesFromSignUpToResetThroughFavme() async throws {
            let stack = try StackUnderTest.required()
            let email = uniqueEmail("favme-journey")
            let phone = try FavmeDevice(stack: stack)
            defer { phone.removeFiles() }

            let signUp = try await phone.run("signup", "--email", email, "--experience", "rijksmuseum",
                                             "--password-stdin", "--json", input: accountPassword)
            let account = try signUp.json()
            #expect(account["email"] as? String == email && account["experience"] as? String == "rijksmuseum")
            #expect(account["accessToken"] == nil, "favme printed a token")
            try phone.expectPrivateFiles(["session.json", "device-credentials.json"])

            let verifyLink = try await AccountRecoveryTests.link(in: stack, to: email,
                                                                 subject: "Confirm your email for FavoriteMe")
            #expect(try await phone.run("verify", "--link", verifyLink.absoluteString, "--json")
                .json()["emailVerified"] as? Bool == true)

            let me = try await phone.run("me")
            try me.expectLine(#"^email +\#(NSRegularExpression.escapedPattern(for: email))$"#)
            try me.expectLine(#"^experience +rijksmuseum \(Rijksmuseum\)$"#)

            try await phone.run("search", "rembrandt").expectLine(#"^ +SK-C-5 +The Night Watch.* +Rembrandt van Rijn +1642$"#)
            let found = try await phone.run("search", "rembrandt", "--json").json()["items"] as? [[String: Any]] ?? []
            #expect(found.contains { $0["id"] as? String == "SK-C-5" })
            #expect(found.allSatisfy { $0["experience"] as? String == "rijksmuseum" })

            let favorited = try await phone.run("fav", "SK-C-5", "--json").json()
            let favoritedItem = favorited["item"] as? [String: Any]
            #expect(favoritedItem?["id"] as? String == "SK-C-5" && favoritedItem?["experience"] as? String == "rijksmuseum")
            #expect((favoritedItem?["title"] as? String)?.hasPrefix("The Night Watch") == true)
            #expect(favorited["favoritedAt"] is String && (favorited["version"] as? Int ?? 0) >= 1)
            #expect(Set(favorited.keys) == ["item", "favoritedAt", "version"])  // nothing said twice
            try await phone.run("fav", "SK-C-5").expectLine("^favorited SK-C-5 — The Night Watch")
            try await phone.run("search", "rembrandt").expectLine("^♥ +SK-C-5 ")
            let listed = try await phone.run("favorites")
            // Each favorite drawn as its item is in search results, with when it was added.
            try listed.expectLine("^ID +TITLE +SUBTITLE +DATING +ADDED$")
            try listed.expectLine(#"^SK-C-5 +The Night Watch.* +Rembrandt van Rijn +1642 +\d{4}-\d{2}-\d{2}$"#)
            let favorites = try await phone.run("favorites", "--json").json()
            let items = favorites["items"] as? [[String: Any]]
            #expect(items?.map { ($0["item"] as? [String: Any])?["id"] as? String } == ["SK-C-5"])
            #expect(items?.first.map { Set($0.keys) } == ["item", "favoritedAt", "version"])
            #expect((favorites["version"] as? Int ?? 0) >= 1)
            try phone.expectPrivateFiles(["session.json", "device-credentials.json", "<user>/queue.json",
                                          "<user>/favorites.journal"])

            // A second device of the same user watches; an unfavorite on the phone reaches it as it happens.
            let tablet = try FavmeDevice(stack: stack)
            defer { tablet.removeFiles() }
            _ = try await tablet.run("login", "--email", email, "--password-stdin", input: accountPassword)
            _ = try await tablet.run("sync")
            let watching = try tablet.start("watch", "--count", "1", "--json")
            _ = try await eventually({ watching.error }, until: { $0.contains("watching") })
            _ = try await phone.run("unfav", "SK-C-5")
            let change = try await tablet.finish(watching, arguments: ["watch"]).json()
            #expect(change["kind"] as? String == "removed" && change["itemId"] as? String == "SK-C-5")

            try await phone.run("logout").expectLine("^signed out \(NSRegularExpression.escapedPattern(for: email))$")
            // The synced copy is gone; the queue stays, empty, for the next sign-in, and so does the device credential.
            try phone.expectPrivateFiles(["device-credentials.json", "<user>/queue.json"])
            let queue = try #require(phone.userFile("queue.json"))
            let writes = try JSONSerialization.jsonObject(with: Data(contentsOf: queue)) as? [String: Any]
            #expect((writes?["writes"] as? [Any])?.isEmpty == true)
            let signedOut = try await phone.run("me", status: 3)
            #expect(signedOut.error.contains("not signed in"))
            let problem = try JSONSerialization.jsonObject(with: Data(try await phone.run("me", "--json", status: 3)
                .error.utf8)) as? [String: Any]
            #expect(problem?["type"] as? String == "signed-out")

            let newPassword = "a new passphrase, chosen after forgetting"
            try await phone.run("reset-password", "--email", email).expectLine("^If an account uses this address")
            let resetLink = try await AccountRecoveryTests.link(in: stack, to: email,
                                                                subject: "Reset your FavoriteMe password")
            #expect(try await phone.run("reset-password", "--link", resetLink.absoluteString, "--password-stdin", "--json",
                                        input: newPassword).json()["passwordReset"] as? Bool == true)
            _ = try await phone.run("login", "--email", email, "--password-stdin", input: accountPassword, status: 1)
            let signedIn = try await phone.run("login", "--email", email, "--password-stdin", "--json", input: newPassword)
                .json()
            #expect(signedIn["email"] as? String == email && signedIn["emailVerified"] as? Bool == true)
        }
    }
}

/// One device's favme: its own config directory, against the stack's gateway.
struct FavmeDevice {
    struct Run {
        let output: String
        let error: String

        func json() throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "not JSON: \(output)")
        }

        /// Some line of the output matches `pattern`.
        func expectLine(_ pattern: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let expression = try NSRegularExpression(pattern: pattern, options: .anchorsMatchLines)
            let range = NSRange(output.startIndex..., in: output)
            #expect(expression.firstMatch(in: output, range: range) != nil, "no line matches /\(pattern)/ in:\n\(output)",
                    sourceLocation: sourceLocation)
        }
    }

    /// A favme started, its output going to files.
    struct Started {
        let process: Process
        let outputFile: URL
        let errorFile: URL
        var error: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }
    }

    let favme: Favme
    let gateway: String
    let configDirectory: URL
    /// Where the runs' output goes: beside the config directory, not in it.
    let workDirectory: URL

    init(stack: StackUnderTest) throws {
        favme = try Favme()
        gateway = stack.gateway
        workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("favme-journey-\(UUID())")
        configDirectory = workDirectory.appending(path: "config")
        try FileManager.default.createDirectory(at: configDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    /// Starts favme with `arguments` (the global options after them, as favme takes them).
    func start(_ arguments: String..., input: String? = nil) throws -> Started {
        try start(arguments, input: input)
    }

    private func start(_ arguments: [String], input: String?) throws -> Started {
        let run = UUID().uuidString
        let started = Started(process: Process(), outputFile: workDirectory.appending(path: "\(run).out"),
                              errorFile: workDirectory.appending(path: "\(run).err"))
        for file in [started.outputFile, started.errorFile] {
            FileManager.default.createFile(atPath: file.path, contents: nil)
        }
        started.process.executableURL = favme.executable
        started.process.arguments = arguments + ["--server", gateway, "--config-dir", configDirectory.path]
        let stdin = Pipe()
        started.process.standardInput = stdin
        started.process.standardOutput = try FileHandle(forWritingTo: started.outputFile)
        started.process.standardError = try FileHandle(forWritingTo: started.errorFile)
        try started.process.run()
        if let input { stdin.fileHandleForWriting.write(Data((input + "\n").utf8)) }
        try stdin.fileHandleForWriting.close()
        return started
    }

    /// Waits for a started favme to end and insists on its exit status.
    func finish(_ started: Started, arguments: [String], status: Int32 = 0,
                sourceLocation: SourceLocation = #_sourceLocation) async throws -> Run {
        while started.process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let run = Run(output: try String(contentsOf: started.outputFile, encoding: .utf8), error: started.error)
        let failure = "favme \(arguments.joined(separator: " ")): exit status \(started.process.terminationStatus), "
            + "expected \(status)\nstdout: \(run.output)\nstderr: \(run.error)"
        #expect(started.process.terminationStatus == status, Comment(rawValue: failure), sourceLocation: sourceLocation)
        return run
    }

    /// Runs favme to its end and insists on its exit status.
    @discardableResult
    func run(_ arguments: String..., input: String? = nil, status: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) async throws -> Run {
        try await finish(try start(arguments, input: input), arguments: arguments, status: status,
                         sourceLocation: sourceLocation)
    }

    /// Exactly `expected` in the config directory (a user's files as `<user>/name`), every file 0600, every directory 0700.
    func expectPrivateFiles(_ expected: Set<String>, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var found: Set<String> = []
        let manager = FileManager.default
        let root = configDirectory.standardizedFileURL.path
        #expect(try manager.attributesOfItem(atPath: root)[.posixPermissions] as? Int == 0o700,
                sourceLocation: sourceLocation)
        for case let path as String in manager.enumerator(atPath: root) ?? NSEnumerator() {
            let mode = try manager.attributesOfItem(atPath: root + "/" + path)[.posixPermissions] as? Int
            let parts = path.split(separator: "/")
            if (try manager.attributesOfItem(atPath: root + "/" + path)[.type] as? FileAttributeType) == .typeDirectory {
                #expect(mode == 0o700, "\(path) is not 0700", sourceLocation: sourceLocation)
                continue
            }
            #expect(mode == 0o600, "\(path) is not 0600", sourceLocation: sourceLocation)
            found.insert(parts.count == 2 && UUID(uuidString: String(parts[0])) != nil ? "<user>/\(parts[1])" : path)
        }
        #expect(found == expected, sourceLocation: sourceLocation)
    }

    /// A file in the (one) user directory.
    func userFile(_ name: String) -> URL? {
        let users = (try? FileManager.default.contentsOfDirectory(atPath: configDirectory.path)) ?? []
        return users.first { UUID(uuidString: $0) != nil }.map { configDirectory.appending(path: "\($0)/\(name)") }
    }

    func removeFiles() { try? FileManager.default.removeItem(at: workDirectory) }
}
