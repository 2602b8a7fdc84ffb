import ArgumentParser
import FavoritesService
import ServiceKit

@main
struct FavoritesServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "favorites-service", abstract: "FavoriteMe favorites: an append-only event log with per-user views.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner.run(options: options, defaults: serviceDefaults) { reader in
            try await buildApplication(reader: reader)
        }
    }
}
