import ArgumentParser
import FavoritesService
import Foundation
import ServiceKit

@main
struct FavoritesServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "favorites-service",
        abstract: "FavoriteMe favorites: an append-only event log with per-user views.",
        subcommands: [Serve<FavoritesServiceDefinition>.self, SettingsCommand<FavoritesServiceDefinition>.self, Rebuild.self],
        defaultSubcommand: Serve<FavoritesServiceDefinition>.self
    )
}

struct Rebuild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild a view from the event log while the service keeps serving, then switch to it.",
        discussion: "Reads DATABASE_URL like the service. With --user, rebuilds only that user's favorites (repair)."
    )

    @Argument(help: "The view: \(RebuildableView.allCases.map(\.rawValue).joined(separator: " or ")).")
    var view: String

    @Option(help: "Repair one user's favorites only (their user id).")
    var user: String?

    @OptionGroup var options: ServiceOptions

    func validate() throws {
        guard RebuildableView(rawValue: view) != nil else {
            throw ValidationError("unknown view \"\(view)\"; expected favorites or popular")
        }
        if let user, UUID(uuidString: user) == nil { throw ValidationError("--user must be a user id (a UUID)") }
    }

    func run() async throws {
        let report = try await FavoritesService.rebuild(
            view: RebuildableView(rawValue: view)!, user: user.flatMap(UUID.init(uuidString:)),
            reader: options.configReader()
        )
        print(report)
    }
}
