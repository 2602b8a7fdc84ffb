import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation

struct SignUp: FavmeCommand {
    static let configuration = CommandConfiguration(
        commandName: "signup", abstract: "Create an account and sign in on this device.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Your email address.") var email: String
    @Option(help: ArgumentHelp("The experience to browse (see `favme experience`).", valueName: "id"))
    var experience: String
    @OptionGroup var password: PasswordOptions

    func execute(_ context: Context) async throws {
        let secret = try password.read(confirm: true)
        let user = try await context.client.signUp(email: email, password: secret,
                                                   experience: ExperienceID(rawValue: experience))
        try context.output.show(user) { "signed up as \(user.email) (experience: \(user.experience))" }
    }
}

struct LogIn: FavmeCommand {
    static let configuration = CommandConfiguration(
        commandName: "login", abstract: "Sign in on this device.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Your email address.") var email: String
    @OptionGroup var password: PasswordOptions

    func execute(_ context: Context) async throws {
        let secret = try password.read(confirm: false)
        let user = try await context.client.signIn(email: email, password: secret)
        try context.output.show(user) { "signed in as \(user.email) (experience: \(user.experience))" }
    }
}

struct LogOut: FavmeCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign out this device (or the others, or every device).",
        discussion: "Signing out this device also forgets its copy of your favorites; writes still queued stay, and are "
            + "sent when you sign in here again.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "End every session of yours, this one included.") var everywhere = false
    @Flag(help: "End every other session of yours; this device stays signed in.") var others = false

    func validate() throws {
        if everywhere && others { throw ValidationError("--everywhere and --others exclude each other") }
    }

    /// The JSON of a logout: the server answers without a body.
    struct Outcome: Encodable {
        var signedOut: Bool
        var scope: String
    }

    func execute(_ context: Context) async throws {
        let scope: LogoutScope = everywhere ? .global : others ? .others : .current
        guard let user = await context.client.storedUser else {
            try context.output.show(Outcome(signedOut: false, scope: scope.rawValue)) { "not signed in" }
            return
        }
        // The library forgets this device's session even when the server cannot be told; say so, since the session
        // then stays valid on the server until it expires.
        let failure: FavoriteMeError?
        do {
            try await context.client.signOut(scope)
            failure = nil
        } catch {
            failure = error
        }
        if let detail = failure?.unreachableDetail, scope != .others {
            let line = "signed out on this device, but \(context.server.absoluteString) could not be told (\(detail)); "
                + "end the session with `favme sessions end` from another sign-in"
            Failure.emit(LocalProblem(type: "unreachable", title: "Server unreachable", detail: line), line: line,
                         json: context.output.json)
            throw ExitStatus.unreachable.code
        }
        if let failure { throw failure }
        try context.output.show(Outcome(signedOut: true, scope: scope.rawValue)) {
            switch scope {
            case .others: "signed out your other sessions; \(user.email) stays signed in here"
            case .global: "signed out \(user.email) everywhere"
            default: "signed out \(user.email)"
            }
        }
    }
}

struct Me: FavmeCommand {
    static let configuration = CommandConfiguration(abstract: "Show the signed-in user (as the server has it now).")

    @OptionGroup var global: GlobalOptions

    func execute(_ context: Context) async throws {
        let user = try await context.client.me()
        try context.output.show(user) {
            var fields = Fields()
            fields.add("email", user.email)
            fields.add("id", user.id.uuidString.lowercased())
            let name = Experience.named(user.experience)?.displayName
            fields.add("experience", user.experience.rawValue + (name.map { " (\($0))" } ?? ""))
            fields.add("member since", Format.date(user.createdAt))
            fields.add("preferences", user.preferences.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value)" }.joined(separator: "\n"))
            return fields.render()
        }
    }
}

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List your sessions (devices), or end one.",
        subcommands: [Listing.self, End.self], defaultSubcommand: Listing.self)

    struct Listing: FavmeCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List your sessions, most recently used first.")

        @OptionGroup var global: GlobalOptions

        func execute(_ context: Context) async throws {
            let sessions = try await context.client.sessionList()
            try context.output.show(SessionList(sessions: sessions)) {
                var table = Table([Table.Column(title: "", maxWidth: 1), Table.Column(title: "ID", maxWidth: 36),
                                   Table.Column(title: "DEVICE", maxWidth: 32), Table.Column(title: "LAST USED"),
                                   Table.Column(title: "EXPIRES"), Table.Column(title: "USER AGENT", maxWidth: 40)])
                for session in sessions {
                    table.add([session.current ? "*" : "", session.id.uuidString.lowercased(),
                               session.deviceName ?? "", Format.dateTime(session.lastUsedAt),
                               Format.date(session.expiresAt), session.userAgent ?? ""])
                }
                return table.render() + "\n(* this device)"
            }
        }
    }

    struct End: FavmeCommand {
        static let configuration = CommandConfiguration(abstract: "End one session (sign that device out).")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The session's id, as `favme sessions` lists it.") var id: String

        struct Outcome: Encodable { var ended: String }

        func execute(_ context: Context) async throws {
            guard let session = UUID(uuidString: id) else { throw CLIError.usage("'\(id)' is not a session id") }
            try await context.client.endSession(session)
            try context.output.show(Outcome(ended: session.uuidString.lowercased())) {
                "ended session \(session.uuidString.lowercased())"
            }
        }
    }
}
