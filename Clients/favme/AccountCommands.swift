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
        } catch let error as FavoriteMeError {
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
            if let name = user.displayName { fields.add("display name", name) }
            fields.add("id", user.id.uuidString.lowercased())
            let name = Experience.named(user.experience)?.displayName
            fields.add("experience", user.experience.rawValue + (name.map { " (\($0))" } ?? ""))
            fields.add("email verified", user.emailVerified ? "yes" : "no (`favme verify` sends the mail again)")
            fields.add("member since", Format.date(user.createdAt))
            fields.add("preferences", user.preferences.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value)" }.joined(separator: "\n"))
            return fields.render()
        }
    }
}

/// `--token` or `--link`: the token of a mailed link, given as itself or as the whole link.
struct LinkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The token of the mailed link (the value after `token=`).", valueName: "token"))
    var token: String?
    @Option(help: ArgumentHelp("The whole link of the mail, instead of --token.", valueName: "url"))
    var link: String?

    var given: Bool { token != nil || link != nil }

    func validate() throws {
        if token != nil && link != nil { throw ValidationError("--token and --link exclude each other") }
    }

    /// The token, from `--token` or from a `--link` of a reset mail (`resetLink`) or of a verification mail.
    func read(resetLink: Bool) throws -> String {
        if let token {
            let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { throw CLIError.usage("--token is empty") }
            guard !trimmed.contains("://") else { throw CLIError.usage("that is a whole link: give it with --link") }
            return trimmed
        }
        let text = (link ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let url = URL(string: text), let parsed = FavoriteMeClient.recoveryLink(from: url) else {
            throw CLIError.usage("'\(text)' is not the link of a FavoriteMe mail (…/account/…?token=…)")
        }
        let isReset = if case .passwordReset = parsed { true } else { false }
        guard isReset == resetLink else {
            throw CLIError.usage(isReset ? "this is a password reset link: give it to `favme reset-password --link`"
                                         : "this is a verification link: give it to `favme verify --link`")
        }
        return parsed.token
    }
}

struct ResetPassword: FavmeCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset-password",
        abstract: "Reset a forgotten password: ask for the mail, then set the new password with its link.",
        discussion: """
            `favme reset-password --email <email>` asks for a mail with a link (the answer is the same whether or \
            not the address has an account). Open the link in a browser, or give it here: \
            `favme reset-password --link <url>` (or `--token <token>`) asks for the new password and sets it. \
            Every session of the account then ends, this device's included: sign in again with the new password.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "The account's email address: a mail with a reset link is sent to it.") var email: String?
    @OptionGroup var linkOptions: LinkOptions
    @OptionGroup var password: PasswordOptions

    func validate() throws {
        if (email != nil) == linkOptions.given {
            throw ValidationError("give --email (to ask for the mail), or --token or --link (to set the new password)")
        }
        if email != nil && password.passwordStdin {
            throw ValidationError("--password-stdin goes with --token or --link")
        }
    }

    /// The JSON of a reset: the server answers without a body.
    struct Outcome: Encodable { var passwordReset: Bool }

    func execute(_ context: Context) async throws {
        if let email {
            let accepted = try await context.client.requestPasswordReset(email: email)
            try context.output.show(accepted) {
                accepted.detail + "\nOpen its link, or run `favme reset-password --link <link>`."
            }
            return
        }
        let token = try linkOptions.read(resetLink: true)
        let secret = try password.read(confirm: true)
        try await context.client.confirmPasswordReset(token: token, newPassword: secret)
        try context.output.show(Outcome(passwordReset: true)) {
            "password changed; every session of the account has ended: sign in with `favme login --email <email>`"
        }
    }
}

struct Verify: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify your email: send the mail again, or confirm it with its link.",
        discussion: """
            Signed in, `favme verify` sends a new verification mail (the link of an earlier one stops working). \
            `favme verify --link <url>` (or `--token <token>`) confirms the address, signed in or not; a session on \
            this device is then refreshed, so its profile and token say verified.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var linkOptions: LinkOptions

    /// The JSON of a confirmation: the server answers without a body.
    struct Outcome: Encodable { var emailVerified: Bool }

    func execute(_ context: Context) async throws {
        guard linkOptions.given else {
            let accepted = try await context.client.resendVerificationEmail()
            try context.output.show(accepted) {
                accepted.detail + "\nOpen its link, or run `favme verify --link <link>`."
            }
            return
        }
        let token = try linkOptions.read(resetLink: false)
        try await context.client.confirmEmail(token: token)
        try context.output.show(Outcome(emailVerified: true)) { "email verified" }
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
