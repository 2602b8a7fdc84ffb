import Contracts
import FavoriteMeClient
import Foundation
import Observation

/// Where the sample app finds its server and keeps its files: `FAVORITEME_URL` (the local stack's gateway by
/// default) and `FAVORITEME_EXPERIENCE`, from the environment (a scheme's arguments in Xcode).
public struct SampleConfiguration: Sendable {
    public var baseURL: URL
    public var experience: ExperienceID
    /// The user's queue and synced favorites: Application Support, as Apple asks for data the app makes.
    public var directory: URL

    public init(baseURL: URL, experience: ExperienceID, directory: URL) {
        self.baseURL = baseURL
        self.experience = experience
        self.directory = directory
    }

    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> SampleConfiguration
    {
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return SampleConfiguration(
            baseURL: environment["FAVORITEME_URL"].flatMap(URL.init(string:)) ?? URL(string: "http://localhost:8080")!,
            experience: ExperienceID(rawValue: environment["FAVORITEME_EXPERIENCE"] ?? "rijksmuseum"),
            directory: support.appendingPathComponent("FavoritesSample", isDirectory: true))
    }
}

/// Everything the app's screens share: one client for the whole app, the favorites model, the sign-in form and
/// the search. No SwiftUI here, so it builds wherever the client does.
@MainActor @Observable
public final class SampleApp {
    public let client: FavoriteMeClient
    public let favorites: FavoritesModel
    public let signIn: SignInForm
    public let search: CatalogSearch

    public init(_ configuration: SampleConfiguration, tokens: (any TokenStore)? = nil) {
        client = FavoriteMeClient(
            baseURL: configuration.baseURL, deviceName: "FavoritesSample",
            tokens: tokens ?? Self.platformTokenStore(in: configuration.directory),
            local: FileLocalStore(directory: configuration.directory))
        favorites = FavoritesModel(client: client, experience: configuration.experience)
        signIn = SignInForm(client: client)
        search = CatalogSearch(client: client, experience: configuration.experience)
    }

    /// At launch: opens into the stored session, if any, without waiting for the network.
    public func launch() async {
        _ = try? await client.restoreSession()
    }

    /// The Keychain on Apple platforms; an owner-only file elsewhere.
    static func platformTokenStore(in directory: URL) -> any TokenStore {
        #if canImport(Security)
        KeychainTokenStore(service: "com.example.FavoritesSample")
        #else
        FileTokenStore(url: directory.appendingPathComponent("session.json"))
        #endif
    }
}
