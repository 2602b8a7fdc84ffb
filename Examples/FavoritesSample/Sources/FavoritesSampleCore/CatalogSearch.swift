import Contracts
import FavoriteMeClient
import Foundation
import Observation

/// The search screen's state: the text, the items found, and a search that follows the typing. A search typed past
/// is cancelled; its `CancellationError` is never shown.
@MainActor @Observable
public final class CatalogSearch {
    public var text = ""
    public private(set) var items: [CatalogItem] = []
    public private(set) var isSearching = false
    /// Why the last search failed, in words for the user (offline: the favorites still show).
    public private(set) var message: String?
    public let experience: ExperienceID
    private let client: FavoriteMeClient
    @ObservationIgnored private var pending: Task<Void, Never>?

    init(client: FavoriteMeClient, experience: ExperienceID) {
        self.client = client
        self.experience = experience
    }

    /// The text changed: search once typing pauses, cancelling the search before.
    public func textChanged() {
        pending?.cancel()
        pending = Task { [weak self] in
            do { try await Task.sleep(for: .milliseconds(300)) } catch { return }
            await self?.search()
        }
    }

    public func search() async {
        let query = text.trimmingCharacters(in: .whitespaces)
        isSearching = true
        defer { isSearching = false }
        do {
            items = try await client.items(in: experience, matching: query.isEmpty ? nil : query).items
            message = nil
        } catch let error as FavoriteMeError {
            message = error.errorDescription
        } catch {
            // Cancelled: a newer search is under way.
        }
    }
}
