import Contracts
import Foundation

/// What the client keeps on the device besides the session: writes waiting to be sent, and the favorites as last
/// synced with the changes feed.
public struct LocalState: Codable, Sendable, Equatable {
    /// The user this copy belongs to.
    public var owner: UUID?
    /// In the order they were made.
    public var pending: [PendingWrite] = []
    /// The stream version the synced favorites are at (`since` for the next sync).
    public var syncedVersion: Int64 = 0
    /// By experience, then item id.
    public var favorites: [String: [String: Favorite]] = [:]

    public init() {}
}

/// Where ``LocalState`` is kept: a file for an app or a command-line tool (``FileLocalStore``), memory in tests.
public protocol LocalStore: Sendable {
    func load() async throws -> LocalState
    func save(_ state: LocalState) async throws
}

public actor MemoryLocalStore: LocalStore {
    private var state: LocalState

    public init(_ state: LocalState = LocalState()) { self.state = state }

    public func load() -> LocalState { state }
    public func save(_ state: LocalState) { self.state = state }
}

/// An owner-only JSON file (0600, in a 0700 directory), replaced whole on each save.
public struct FileLocalStore: LocalStore {
    public let url: URL

    public init(url: URL) { self.url = url }

    public func load() throws -> LocalState {
        guard let data = try? Data(contentsOf: url) else { return LocalState() }
        return try JSONCoding.decoder.decode(LocalState.self, from: data)
    }

    public func save(_ state: LocalState) throws {
        try OwnerOnlyFile.write(try JSONCoding.encoder.encode(state), to: url)
    }
}
