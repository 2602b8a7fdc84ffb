import Contracts
import Foundation
#if canImport(Security)
import Security
#endif

/// A signed-in session as the client keeps it between launches.
public struct StoredSession: Codable, Sendable, Hashable {
    public var accessToken: String
    public var refreshToken: String
    /// When the access token expires (from `expiresIn` at sign-in or refresh).
    public var accessTokenExpiresAt: Date
    public var user: UserProfile
    /// The key of a refresh sent with `refreshToken` whose answer has not been stored yet: every retry of that refresh
    /// sends it again, so that the server answers with the same successor instead of taking the retry for a stolen
    /// token's reuse (a secret like the tokens: the Keychain keeps it with them).
    public var pendingRefreshKey: String?

    public init(accessToken: String, refreshToken: String, accessTokenExpiresAt: Date, user: UserProfile,
                pendingRefreshKey: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.user = user
        self.pendingRefreshKey = pendingRefreshKey
    }

    init(_ session: AuthSession, now: Date) {
        self.init(accessToken: session.accessToken, refreshToken: session.refreshToken,
                  accessTokenExpiresAt: now.addingTimeInterval(TimeInterval(session.expiresIn)), user: session.user)
    }
}

/// Where the session is kept: the Keychain in an app (``KeychainTokenStore``), an owner-only file for a command-line
/// tool or on Linux (``FileTokenStore``), memory in tests (``MemoryTokenStore``).
///
/// Beside it, the device credentials the server gave this device, one per account: they outlive sign-out (they say
/// the device signed in to that account before, so strangers' failed sign-ins from the same address do not slow it).
/// A store that cannot keep them may answer nil and drop them: the device is then treated as new at each sign-in.
public protocol TokenStore: Sendable {
    func load() async throws -> StoredSession?
    func save(_ session: StoredSession) async throws
    func clear() async throws
    /// The device credential kept for `email` (normalized: trimmed, lower case).
    func deviceCredential(for email: String) async throws -> String?
    func saveDeviceCredential(_ credential: String, for email: String) async throws
}

/// Keeps the session in memory only: gone when the process ends.
public actor MemoryTokenStore: TokenStore {
    private var session: StoredSession?
    private var deviceCredentials: [String: String] = [:]

    public init(_ session: StoredSession? = nil) { self.session = session }

    public func load() -> StoredSession? { session }
    public func save(_ session: StoredSession) { self.session = session }
    public func clear() { session = nil }
    public func deviceCredential(for email: String) -> String? { deviceCredentials[email] }
    public func saveDeviceCredential(_ credential: String, for email: String) { deviceCredentials[email] = credential }
}

/// Keeps the session in a JSON file readable and writable by its owner only (mode 0600, in a 0700 directory), and the
/// device credentials in `device-credentials.json` beside it.
public struct FileTokenStore: TokenStore {
    public let url: URL

    public init(url: URL) { self.url = url }

    private var credentialsURL: URL { url.deletingLastPathComponent().appendingPathComponent("device-credentials.json") }

    private func credentials() throws -> [String: String] {
        guard let data = try? Data(contentsOf: credentialsURL) else { return [:] }
        return try JSONCoding.decoder.decode([String: String].self, from: data)
    }

    public func deviceCredential(for email: String) throws -> String? { try credentials()[email] }

    public func saveDeviceCredential(_ credential: String, for email: String) throws {
        var all = (try? credentials()) ?? [:]  // an unreadable file only loses "known device" status
        all[email] = credential
        try OwnerOnlyFile.write(try JSONCoding.encoder.encode(all), to: credentialsURL)
    }

    public func load() throws -> StoredSession? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try JSONCoding.decoder.decode(StoredSession.self, from: data)
    }

    public func save(_ session: StoredSession) throws {
        try OwnerOnlyFile.write(try JSONCoding.encoder.encode(session), to: url)
    }

    public func clear() throws {
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }
}

#if canImport(Security)
/// Keeps the session in the Keychain, as a generic password of `service` available after the first unlock (an
/// app woken in the background can still sign its requests), on this device only.
public struct KeychainTokenStore: TokenStore {
    public let service: String
    public let account: String

    public init(service: String = "FavoriteMeClient", account: String = "session") {
        self.service = service
        self.account = account
    }

    public func load() throws -> StoredSession? {
        try item(account).map { try JSONCoding.decoder.decode(StoredSession.self, from: $0) }
    }

    public func save(_ session: StoredSession) throws {
        try store(try JSONCoding.encoder.encode(session), as: account)
    }

    public func clear() throws {
        let status = SecItemDelete(query(account) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }

    public func deviceCredential(for email: String) throws -> String? {
        try item("device-credential:\(email)").map { String(decoding: $0, as: UTF8.self) }
    }

    public func saveDeviceCredential(_ credential: String, for email: String) throws {
        try store(Data(credential.utf8), as: "device-credential:\(email)")
    }

    /// The generic password `account` of `service`.
    private func query(_ account: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
         kSecAttrAccount as String: account]
    }

    /// The item's bytes, or nil when there is none.
    private func item(_ account: String) throws -> Data? {
        var search = query(account)
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw KeychainError(status: status) }
        return data
    }

    /// Replaces (or adds) the item, readable after the first unlock, on this device only.
    private func store(_ data: Data, as account: String) throws {
        let attributes: [String: Any] = [
            kSecValueData as String: data,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(query(account) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(query(account).merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    public struct KeychainError: Error, Equatable { public var status: OSStatus }
}
#endif

/// Files only their owner may read or write: the directory made 0700, the file written to a 0600 temporary file in
/// it and renamed over the old one (`rename(2)`: atomic, so a reader sees the old file or the new, never a partial
/// one, and the file never exists with wider permissions, not even for a moment).
enum OwnerOnlyFile {
    static func write(_ data: Data, to url: URL) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data,
                                             attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        // Not FileManager.replaceItemAt: on Linux it removes the old file first and then fails to move the new one.
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown)
        }
    }

    /// Adds `data` at the end of the file, made 0600 (in a 0700 directory) when there is none.
    static func append(_ data: Data, to url: URL) throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return try write(data, to: url) }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: data)
    }
}

/// The server's JSON: ISO 8601 dates.
enum JSONCoding {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            // The server writes whole seconds or fractions: accept both.
            if let date = (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
                ?? (try? Date(text, strategy: .iso8601)) {
                return date
            }
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a date: \(text)"))
        }
        return decoder
    }()
}
