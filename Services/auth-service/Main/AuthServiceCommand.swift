import ArgumentParser
import AuthService
import ServiceKit

@main
struct AuthServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "auth-service", abstract: "FavoriteMe accounts, sessions and access tokens.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner.run(options: options, defaults: serviceDefaults) { reader in
            try await buildApplication(reader: reader)
        }
    }
}
