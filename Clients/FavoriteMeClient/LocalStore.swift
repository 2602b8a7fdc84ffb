import Foundation

/// The files the client keeps for each user of the device, besides the session.
public enum LocalDocument: String, Sendable, CaseIterable, Codable {
    /// The writes not yet folded into the synced copy: small, saved on every heart.
    case queue
    /// The favorites as last synced and the position in the changes feed, as of the last compaction: rewritten only
    /// when the journal has grown as large as it, so neither a heart nor a sync rewrites a large copy.
    case favorites
    /// The syncs since: one line appended per sync (an echo of the user's own heart costs one short line).
    case journal

    /// Its file's name in the user's directory.
    public var fileName: String { self == .journal ? "favorites.journal" : "\(rawValue).json" }
}

/// Where the client keeps each user's ``LocalDocument``s: files for an app or a command-line tool
/// (``FileLocalStore``), memory in tests (``MemoryLocalStore``). The client encodes, versions and migrates the
/// documents; a store only keeps bytes.
///
/// Synchronous on purpose: the client changes a document and saves it in one step of its queue's actor, so that two
/// writes made at once can never save over each other (an `await` in between would let the second one in). A store
/// is local and small: a queue is kilobytes, a synced copy of thousands of favorites about a megabyte.
public protocol LocalStore: Sendable {
    /// The document's bytes, or nil when there is none.
    func read(_ document: LocalDocument, of user: UUID) throws -> Data?
    /// Replaces the document whole; after a crash the old bytes or the new are there, never a mix.
    func write(_ data: Data, to document: LocalDocument, of user: UUID) throws
    /// Adds `data` at the end of the document (made if there is none). A crash may leave part of it: the client
    /// reads only whole lines.
    func append(_ data: Data, to document: LocalDocument, of user: UUID) throws
    /// Moves a document the client cannot read out of the way, keeping its bytes, and says where it went.
    func setAside(_ document: LocalDocument, of user: UUID) throws -> String
    func remove(_ document: LocalDocument, of user: UUID) throws
}

extension LocalStore {
    /// For a store written before appends: the document read and written whole (what appending saves a file store).
    public func append(_ data: Data, to document: LocalDocument, of user: UUID) throws {
        try write((try read(document, of: user) ?? Data()) + data, to: document, of: user)
    }
}

/// Keeps everything in memory: gone when the process ends.
public final class MemoryLocalStore: LocalStore, @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock` only.
    private let lock = NSLock()
    private var documents: [String: Data] = [:]
    private var asideDocuments: [String: Data] = [:]
    private var writeCounts: [LocalDocument: Int] = [:]
    private var appendCounts: [LocalDocument: Int] = [:]

    public init() {}

    /// Documents set aside, by the name ``setAside(_:of:)`` gave.
    public var setAsideDocuments: [String: Data] { lock.withLock { asideDocuments } }
    /// How many times each document was written whole, for tests of what a write costs.
    public var writes: [LocalDocument: Int] { lock.withLock { writeCounts } }
    /// How many times something was appended to each document.
    public var appends: [LocalDocument: Int] { lock.withLock { appendCounts } }

    private func key(_ document: LocalDocument, _ user: UUID) -> String { "\(user.uuidString.lowercased())/\(document)" }

    public func read(_ document: LocalDocument, of user: UUID) -> Data? {
        lock.withLock { documents[key(document, user)] }
    }

    public func write(_ data: Data, to document: LocalDocument, of user: UUID) {
        lock.withLock {
            documents[key(document, user)] = data
            writeCounts[document, default: 0] += 1
        }
    }

    public func append(_ data: Data, to document: LocalDocument, of user: UUID) {
        lock.withLock {
            documents[key(document, user), default: Data()].append(data)
            appendCounts[document, default: 0] += 1
        }
    }

    /// Puts bytes in place as they are, for tests of what the client does with a file it did not write.
    public func place(_ data: Data, as document: LocalDocument, of user: UUID) {
        lock.withLock { documents[key(document, user)] = data }
    }

    public func setAside(_ document: LocalDocument, of user: UUID) -> String {
        lock.withLock {
            let name = "\(key(document, user)).unreadable-\(asideDocuments.count + 1)"
            asideDocuments[name] = documents.removeValue(forKey: key(document, user))
            return name
        }
    }

    public func remove(_ document: LocalDocument, of user: UUID) {
        lock.withLock { documents[key(document, user)] = nil }
    }
}

/// Owner-only JSON files (0600, in 0700 directories): `<directory>/<user id>/<document>.json`, each replaced whole
/// by an atomic rename.
///
/// A `state.json` in `directory` (the single file earlier versions kept, for the one user it names) is moved into
/// that user's documents the first time they are read; the client migrates its contents.
public struct FileLocalStore: LocalStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    public func url(of document: LocalDocument, for user: UUID) -> URL {
        directory.appendingPathComponent(user.uuidString.lowercased(), isDirectory: true)
            .appendingPathComponent(document.fileName)
    }

    public func read(_ document: LocalDocument, of user: UUID) throws -> Data? {
        let url = url(of: document, for: user)
        if !FileManager.default.fileExists(atPath: url.path) { try adoptSingleFile(of: user) }
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try Data(contentsOf: url)
    }

    public func write(_ data: Data, to document: LocalDocument, of user: UUID) throws {
        try OwnerOnlyFile.write(data, to: url(of: document, for: user))
    }

    public func append(_ data: Data, to document: LocalDocument, of user: UUID) throws {
        try OwnerOnlyFile.append(data, to: url(of: document, for: user))
    }

    public func setAside(_ document: LocalDocument, of user: UUID) throws -> String {
        let url = url(of: document, for: user)
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let aside = url.deletingLastPathComponent().appendingPathComponent("\(document.rawValue).unreadable-\(stamp)")
        guard rename(url.path, aside.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        return aside.path
    }

    public func remove(_ document: LocalDocument, of user: UUID) throws {
        let url = url(of: document, for: user)
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }

    /// Earlier versions kept one `state.json` for the one user it names: it becomes that user's two documents (the
    /// client reads both shapes), and then goes.
    private func adoptSingleFile(of user: UUID) throws {
        let single = directory.appendingPathComponent("state.json")
        guard let data = try? Data(contentsOf: single),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              (object["owner"] as? String)?.lowercased() == user.uuidString.lowercased()
        else { return }
        for document in [LocalDocument.queue, .favorites]
        where !FileManager.default.fileExists(atPath: url(of: document, for: user).path) {
            try write(data, to: document, of: user)
        }
        try FileManager.default.removeItem(at: single)
    }
}
