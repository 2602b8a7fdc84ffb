import ArgumentParser
import CatalogProxy
import ServiceKit

@main
struct CatalogServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "catalog-proxy", abstract: "FavoriteMe catalog: Ticketmaster and Rijksmuseum behind one cached API.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner.run(options: options, defaults: serviceDefaults) { reader in
            try await buildApplication(reader: reader)
        }
    }
}
