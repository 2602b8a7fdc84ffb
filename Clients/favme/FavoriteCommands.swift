import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation

/// The line for a write left in the queue.
private func queuedLine(_ write: PendingWrite) -> String {
    let view = WriteView(write)
    let target = view.action == "clear" ? "\(view.experience)" : view.itemId ?? ""
    return "queued (not yet applied): \(view.action) \(target); run `favme sync` to send it"
}

struct Fav: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Favorite an item (queued when the server cannot be reached).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The item's id (as `favme search` lists it).") var id: String
    @OptionGroup var experienceOption: ExperienceOption

    func execute(_ context: Context) async throws {
        let experience = try await context.experience(experienceOption)
        switch try await context.client.favorite(id, in: experience) {
        case .done(let favorite):
            try context.output.show(favorite) {
                "favorited \(favorite.item.id) — \(Table.shorten(favorite.item.title, to: 60))"
            }
        case .queued(let write):
            try context.output.show(QueuedDocument(queued: WriteView(write))) { queuedLine(write) }
        }
    }
}

struct Unfav: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove an item from your favorites (queued when the server cannot be reached).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The item's id.") var id: String
    @OptionGroup var experienceOption: ExperienceOption

    func execute(_ context: Context) async throws {
        let experience = try await context.experience(experienceOption)
        switch try await context.client.unfavorite(id, in: experience) {
        case .done:
            let done = DoneDocument.Done(action: "unfavorite", experience: experience, itemId: id)
            try context.output.show(DoneDocument(done: done)) { "unfavorited \(id)" }
        case .queued(let write):
            try context.output.show(QueuedDocument(queued: WriteView(write))) { queuedLine(write) }
        }
    }
}

struct Clear: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove every favorite of one experience (needs --yes).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var experienceOption: ExperienceOption
    @Flag(help: "Confirm: the favorites cannot be brought back.") var yes = false

    func execute(_ context: Context) async throws {
        let experience = try await context.experience(experienceOption)
        guard yes else {
            throw CLIError.usage("this removes every favorite of \(experience); run again with --yes to confirm")
        }
        switch try await context.client.clearFavorites(in: experience) {
        case .done:
            let done = DoneDocument.Done(action: "clear", experience: experience)
            try context.output.show(DoneDocument(done: done)) { "cleared your \(experience) favorites" }
        case .queued(let write):
            try context.output.show(QueuedDocument(queued: WriteView(write))) { queuedLine(write) }
        }
    }
}

struct FavoritesList: FavmeCommand {
    static let configuration = CommandConfiguration(
        commandName: "favorites", abstract: "List your favorites of one experience.",
        discussion: "Read from the server; when it cannot be reached, the copy synced last is shown instead "
            + "(human output only).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var experienceOption: ExperienceOption
    @Option(help: ArgumentHelp("The order (recent, oldest, title, …; see `favme experience`).", valueName: "sort"))
    var sort: String?
    @Option(help: "Only favorites whose title (or a card's facts) match.") var query: String?
    @Option(help: "The page size.") var limit: Int?
    @Option(help: "The next page: the cursor printed below the previous one.") var cursor: String?

    func execute(_ context: Context) async throws {
        let experience = try await context.experience(experienceOption)
        // A Result rather than a `catch .transport(…) where …`, which crashes the Swift 6.3 compiler (SILGen).
        let answer: Result<FavoritePage, FavoriteMeError>
        do {
            answer = .success(try await context.client.favorites(
                in: experience, sort: sort.map { ListSort(rawValue: $0) }, matching: query, limit: limit, cursor: cursor))
        } catch let error as FavoriteMeError {
            answer = .failure(error)
        }
        let page: FavoritePage
        switch answer {
        case .success(let read):
            page = read
        case .failure(let error) where error.unreachableDetail != nil && !context.output.json:
            try await showSyncedCopy(of: experience, context, because: error.unreachableDetail ?? "")
            return
        case .failure(let error):
            throw error
        }
        try context.output.show(page) {
            var text = page.items.isEmpty ? "no \(experience) favorites"
                : ItemViews.table(page.items, kind: ItemViews.kind(of: experience))
            if let next = page.nextCursor { text += "\nmore: --cursor \(next)" }
            return text
        }
    }

    /// Offline: the device's copy (most recent first, `--query` matched against titles), with the writes still
    /// waiting.
    private func showSyncedCopy(of experience: ExperienceID, _ context: Context, because detail: String) async throws {
        Console.error("favme: could not reach \(context.server.absoluteString) (\(detail)); "
            + "showing the favorites as last synced")
        var favorites = await context.client.syncedFavorites(in: experience)
        if let query { favorites = favorites.filter { $0.item.title.localizedCaseInsensitiveContains(query) } }
        if let limit { favorites = Array(favorites.prefix(max(limit, 0))) }
        let pending = await context.client.pendingWrites().map(WriteView.init).filter { $0.experience == experience }
        var text = favorites.isEmpty ? "no \(experience) favorites synced"
            : ItemViews.table(favorites, kind: ItemViews.kind(of: experience))
        if !pending.isEmpty {
            text += "\nwaiting to be sent:\n" + pending.map { "  \($0.summary)" }.joined(separator: "\n")
        }
        print(text)
    }
}

struct Sync: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send the writes made offline, then bring this device's copy of your favorites up to date.")

    @OptionGroup var global: GlobalOptions

    func execute(_ context: Context) async throws {
        _ = try await context.signedInUser()
        let report = try await context.client.syncFavorites()
        var document = SyncDocument(report.sent)
        document.changes = report.changes
        document.synced = true
        document.waiting = await context.client.pendingWrites().count
        try context.output.show(document) { document.text }
    }
}

struct Watch: FavmeCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print your favorites' changes as they happen, on any of your devices, until interrupted.",
        discussion: """
            Keeps this device's copy current as it goes (as `favme sync` does) and resumes where it left off, so no \
            change is missed across reconnects. One line per change; with --json, one change document per line.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(name: [.customShort("e"), .long], help: ArgumentHelp("Only this experience's changes.", valueName: "id"))
    var experience: String?
    @Option(help: "Stop after this many changes.") var count: Int?

    func execute(_ context: Context) async throws {
        _ = try await context.signedInUser()
        var printed = 0
        for await event in context.client.liveChanges(in: experience.map { ExperienceID(rawValue: $0) }) {
            switch event {
            case .connected:
                Console.error("watching for changes (Ctrl-C to stop)")
            case .changed(let change):
                try context.output.show(change) { Self.line(change) }
                printed += 1
                if let count, printed >= count { return }
            case .resynced:
                Console.error("this device was far behind: its favorites were read again")
            case .disconnected(let error, let retryIn):
                Console.error("disconnected (\(error)); reconnecting in \(Self.seconds(retryIn)) s")
            }
        }
        throw FavoriteMeError.signedOut  // the stream ends only when the session does
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) + Double(attoseconds) / 1e18)
    }

    static func line(_ change: FavoriteChange) -> String {
        switch change.kind {
        case .added:
            "+ \(change.experience) \(change.itemId ?? "")"
                + (change.favorite.map { " — " + Table.shorten($0.item.title, to: 60) } ?? "")
        case .removed: "- \(change.experience) \(change.itemId ?? "")"
        case .cleared: "cleared \(change.experience)"
        }
    }
}
