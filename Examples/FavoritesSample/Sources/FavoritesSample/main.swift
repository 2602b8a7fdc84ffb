// A command-line app on the client library: signs in, searches the user's experience, favorites the first item found
// and prints the hearts. Compiles wherever Foundation does (Linux included).
import Contracts
import FavoriteMeClient
import Foundation

let usage = """
    usage: FavoritesSample <base-url> <email> <password> [search text]
       or: FAVORITEME_URL=… FAVORITEME_EMAIL=… FAVORITEME_PASSWORD=… FavoritesSample [search text]
    Signs in, searches the account's experience, favorites the first item found and prints the hearts.
    """

let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
let fromEnvironment = [environment["FAVORITEME_URL"], environment["FAVORITEME_EMAIL"], environment["FAVORITEME_PASSWORD"]]
let (settings, rest): ([String], ArraySlice<String>) =
    fromEnvironment.allSatisfy({ $0 != nil }) ? (fromEnvironment.compactMap { $0 }, arguments[...])
    : arguments.count >= 3 ? (Array(arguments.prefix(3)), arguments.dropFirst(3)) : ([], [])

if arguments.contains(where: { $0 == "-h" || $0 == "--help" }) || settings.isEmpty {
    print(usage)
    exit(arguments.isEmpty ? 0 : 64)  // 64: EX_USAGE
}
guard let baseURL = URL(string: settings[0]), baseURL.scheme != nil else {
    print("not a URL: \(settings[0])")
    exit(64)
}

let client = FavoriteMeClient(baseURL: baseURL, deviceName: "FavoritesSample")
do {
    let user = try await client.signIn(email: settings[1], password: settings[2])
    let experience = user.experience
    print("signed in as \(user.email) (\(experience))")
    let text = rest.isEmpty ? nil : rest.joined(separator: " ")
    let page = try await client.items(in: experience, matching: text)
    print("\(page.items.count) items\(text.map { " matching \"\($0)\"" } ?? "")")
    if let item = page.items.first {
        // Done, or kept in the device's queue (sent when the server can be reached; the heart is drawn already).
        let result = try await client.favorite(item.id, in: experience)
        if case .done(let favorite) = result {
            print("favorited \(favorite.itemId): \(favorite.title)")
        } else {
            print("the favorite of \(item.id) (\(item.title)) is not applied yet: \(result)")
        }
    }
    let hearts = await client.hearts(in: experience)
    print("hearts: \(hearts.sorted().joined(separator: ", "))")
} catch {
    print("failed: \(error)")
    exit(1)
}
