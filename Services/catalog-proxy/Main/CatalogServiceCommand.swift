import ArgumentParser
import CatalogProxy
import Foundation
import ServiceKit

@main
struct CatalogServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog-proxy",
        abstract: "FavoriteMe catalog: every experience's upstream behind one cached API.",
        subcommands: [Serve<CatalogProxyDefinition>.self, SettingsCommand<CatalogProxyDefinition>.self, Load.self],
        defaultSubcommand: Serve<CatalogProxyDefinition>.self
    )
}

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a dataset experience from files of its upstream's shape, replacing the one kept.",
        discussion: """
            Reads DATABASE_URL like the service and applies its migrations first. Idempotent.
              catalog-proxy load mobiles <phones.json> [<images.json> …]
              catalog-proxy load flashcards <cards.json>
            """
    )

    @Argument(help: "The dataset: \(loadableDatasets.joined(separator: " or ")).")
    var dataset: String

    @Argument(help: "The files: the list first, then any the dataset takes besides.")
    var files: [String]

    @OptionGroup var options: ServiceOptions

    func validate() throws {
        guard loadableDatasets.contains(dataset) else {
            throw ValidationError("unknown dataset \"\(dataset)\"; expected \(loadableDatasets.joined(separator: " or "))")
        }
        guard !files.isEmpty else { throw ValidationError("name the file(s) to load") }
    }

    func run() async throws {
        print(try await loadDataset(dataset, files: files.map { URL(filePath: $0) }, reader: options.configReader()))
    }
}
