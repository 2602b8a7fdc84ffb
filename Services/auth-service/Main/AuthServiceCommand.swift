import ArgumentParser
import AuthService
import ServiceKit

@main
struct AuthServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth-service",
        abstract: "FavoriteMe accounts, sessions and access tokens.",
        subcommands: [Serve<AuthServiceDefinition>.self, SettingsCommand<AuthServiceDefinition>.self],
        defaultSubcommand: Serve<AuthServiceDefinition>.self
    )
}
