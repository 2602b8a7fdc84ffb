import ArgumentParser

/// The root command: only a table of contents; every subcommand takes the global options (``GlobalOptions``).
struct Favme: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "favme",
        abstract: "The FavoriteMe Cloud from the command line: search catalogs, keep favorites, manage sessions.",
        discussion: """
            Sign in once (`favme signup` or `favme login`); the session is kept in <config-dir>/session.json \
            (readable by you only). Favorites made while the server cannot be reached are queued in \
            <config-dir>/state.json and sent by `favme sync` (or by the next write).

            Exit codes: 0 ok, 1 the server refused the request, 2 usage error, 3 not signed in, \
            4 the server could not be reached.
            """,
        subcommands: [
            SignUp.self, LogIn.self, LogOut.self, Me.self, ResetPassword.self, Verify.self, ExperienceCommand.self,
            Search.self, Show.self,
            Fav.self, Unfav.self, FavoritesList.self, Clear.self, Sessions.self, Sync.self, Watch.self,
        ]
    )
}
