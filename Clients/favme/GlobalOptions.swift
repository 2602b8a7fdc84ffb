import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The API gateway (default: $FAVME_SERVER, else http://localhost:8080).",
                               valueName: "url"))
    var server: String?

    @Flag(help: "Machine output: one JSON document on stdout; errors as a problem document on stderr.")
    var json = false

    @Option(help: ArgumentHelp(
        "Where the session and local state are kept (default: $FAVME_CONFIG_DIR, else $XDG_CONFIG_HOME/favme, "
            + "else ~/.config/favme).", valueName: "dir"))
    var configDir: String?

    @Flag(help: "Log every request (method and path) to stderr.")
    var verbose = false

    static let defaultServer = "http://localhost:8080"

    func serverURL() throws -> URL {
        let text = server ?? environment("FAVME_SERVER") ?? Self.defaultServer
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host != nil
        else { throw CLIError.usage("--server must be an http(s) URL, got '\(text)'") }
        return url
    }

    func configDirectory() -> URL {
        if let explicit = configDir ?? environment("FAVME_CONFIG_DIR") {
            return URL(fileURLWithPath: NSString(string: explicit).expandingTildeInPath, isDirectory: true)
        }
        if let xdg = environment("XDG_CONFIG_HOME") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("favme", isDirectory: true)
        }
        // $HOME first: Foundation's home directory on Linux is the passwd entry's, whatever HOME says.
        let home = environment("HOME").map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".config/favme", isDirectory: true)
    }

    /// Unset and empty are the same: `FAVME_SERVER= favme …` means "the default".
    private func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }
}

/// `--experience` for commands that work on one experience (default: the signed-in user's).
struct ExperienceOption: ParsableArguments {
    @Option(name: [.customShort("e"), .long],
            help: ArgumentHelp("The experience (default: yours, see `favme experience`).", valueName: "id"))
    var experience: String?
}

/// What a command runs with: the client on the configured server and files, and how to print.
struct Context {
    let client: FavoriteMeClient
    let server: URL
    let output: Output

    init(_ options: GlobalOptions) throws {
        server = try options.serverURL()
        output = Output(json: options.json)
        let directory = options.configDirectory()
        var log: (@Sendable (RequestRecord) -> Void)?
        if options.verbose {
            log = { request in
                let outcome = request.status.map(String.init) ?? request.failure ?? "no answer"
                Console.error("\(request.method) \(request.path) → \(outcome) in \(request.duration) "
                    + "(request \(request.requestId))")
            }
        }
        client = FavoriteMeClient(
            baseURL: server, deviceName: Self.deviceName(),
            tokens: FileTokenStore(url: directory.appendingPathComponent("session.json")),
            local: FileLocalStore(directory: directory),
            log: log)
    }

    /// The signed-in user as stored (no request), or `.signedOut`.
    func signedInUser() async throws -> UserProfile {
        guard let user = await client.storedUser else { throw FavoriteMeError.signedOut }
        return user
    }

    /// `--experience`, else the signed-in user's.
    func experience(_ option: ExperienceOption) async throws -> ExperienceID {
        if let explicit = option.experience { return ExperienceID(rawValue: explicit) }
        return try await signedInUser().experience
    }

    /// Brings the device's copy of the favorites up to date when the server can be reached: hearts drawn from a
    /// stale copy are better than no list at all, so a failure here is left to the command's own request. The user
    /// hears which waiting writes left the queue.
    func syncQuietly() async {
        guard let report = try? await client.syncFavorites() else { return }
        if !report.sent.sent.isEmpty || !report.sent.refused.isEmpty { Console.error(SyncDocument(report.sent).text) }
    }

    /// "favme on <host>", as the session list shows it (the server takes 1–100 characters).
    private static func deviceName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        return String((host.isEmpty ? "favme" : "favme on \(host)").prefix(100))
    }
}
