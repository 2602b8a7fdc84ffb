import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation

struct ExperienceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "experience", abstract: "Show your experience and the others, or change yours.",
        subcommands: [Overview.self, Change.self], defaultSubcommand: Overview.self)

    struct Overview: FavmeCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the experiences, yours marked with *.")

        @OptionGroup var global: GlobalOptions

        /// The catalog's list with the user's choice (absent when nobody is signed in).
        struct Document: Encodable {
            var current: ExperienceID?
            var experiences: [Experience]
        }

        func execute(_ context: Context) async throws {
            let experiences = try await context.client.experiences()
            // Asked of the server when signed in, so a change made on another device shows; nobody signed in is fine.
            let current: ExperienceID?
            do {
                current = try await context.client.me().experience
            } catch FavoriteMeError.signedOut {
                current = nil
            }
            try context.output.show(Document(current: current, experiences: experiences)) {
                var table = Table([Table.Column(title: "", maxWidth: 1), Table.Column(title: "ID", maxWidth: 20),
                                   Table.Column(title: "NAME", maxWidth: 24), Table.Column(title: "ITEMS", maxWidth: 12),
                                   Table.Column(title: "SEARCH", maxWidth: 40), Table.Column(title: "SORTS", maxWidth: 60)])
                for experience in experiences {
                    table.add([experience.id == current ? "*" : "", experience.id.rawValue, experience.displayName,
                               experience.itemNoun, experience.searchHint,
                               experience.sorts.map(\.id.rawValue).joined(separator: ", ")])
                }
                let footer = current.map { "your experience: \($0)" } ?? "not signed in"
                return table.render() + "\n" + footer
            }
        }
    }

    struct Change: FavmeCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Change your experience.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The experience's id (`favme experience` lists them).") var experience: String

        func execute(_ context: Context) async throws {
            let user = try await context.client.updateProfile(experience: ExperienceID(rawValue: experience))
            try context.output.show(user) { "your experience is now \(user.experience)" }
        }
    }
}

struct Search: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search or browse an experience's catalog; your favorites are marked with ♥.",
        discussion: "What TEXT matches depends on the experience (a city for events, a name for artworks); "
            + "catalogs that can be browsed list items without it.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "What to search for.") var text: String?
    @OptionGroup var experienceOption: ExperienceOption
    @Option(help: ArgumentHelp("A category (a best-seller list: `hardcover-fiction`).", valueName: "id"))
    var category: String?
    @Option(help: ArgumentHelp("The order (the experience's default when absent; see `favme experience`).",
                               valueName: "sort"))
    var sort: String?
    @Option(help: "The page size.") var limit: Int?
    @Option(help: "The next page: the cursor printed below the previous one.") var cursor: String?
    @Flag(help: "List the experience's categories (for --category) instead of searching.") var categories = false

    func execute(_ context: Context) async throws {
        let experience = try await context.experience(experienceOption)
        if categories {
            let list = try await context.client.categories(of: experience)
            try context.output.show(CategoryList(categories: list)) {
                var table = Table([Table.Column(title: "ID"), Table.Column(title: "NAME", maxWidth: 48),
                                   Table.Column(title: "UPDATED", maxWidth: 10)])
                for category in list { table.add([category.id, category.name, category.updated ?? ""]) }
                return list.isEmpty ? "\(experience) has no categories" : table.render()
            }
            return
        }
        let page = try await context.client.items(in: experience, matching: text, category: category,
                                                  sort: sort.map { ListSort(rawValue: $0) }, limit: limit,
                                                  cursor: cursor)
        if context.output.json {
            try context.output.show(page) { "" }
            return
        }
        await context.syncQuietly()
        let hearts = await context.client.hearts(in: experience)
        var text = page.items.isEmpty ? "nothing found"
            : ItemViews.table(page.items, kind: ItemViews.kind(of: experience, sample: page.items.first), hearts: hearts)
        if page.partial { text += "\n(some items could not be fetched in time; asking again may bring them)" }
        if let next = page.nextCursor { text += "\nmore: --cursor \(next)" }
        print(text)
    }
}

struct Show: FavmeCommand {
    static let configuration = CommandConfiguration(abstract: "Show one item in detail.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The item's id (as `favme search` lists it).") var id: String
    @OptionGroup var experienceOption: ExperienceOption

    func execute(_ context: Context) async throws {
        let experience = try await context.experience(experienceOption)
        let item = try await context.client.item(id, in: experience)
        if context.output.json {
            try context.output.show(item) { "" }
            return
        }
        await context.syncQuietly()
        let isFavorite = await context.client.hearts(in: experience).contains(item.id)
        print(ItemViews.detail(item, isFavorite: isFavorite))
    }
}
