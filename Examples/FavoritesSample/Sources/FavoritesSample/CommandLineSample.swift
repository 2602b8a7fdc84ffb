#if !canImport(SwiftUI)
// Where there is no SwiftUI (Linux), the sample runs its core from the command line: signs in, searches the
// experience, hearts the first item found and prints the hearts. CI builds it, and runs it without arguments.
import Contracts
import FavoriteMeClient
import FavoritesSampleCore
import Foundation

@main
enum CommandLineSample {
    static let usage = """
        usage: FAVORITEME_URL=… FavoritesSample <email> <password> [search text]
        Signs in, searches the experience (FAVORITEME_EXPERIENCE, rijksmuseum by default), hearts the first item
        found and prints the hearts. The app itself is the SwiftUI target, on Apple platforms.
        """

    @MainActor
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2, !arguments.contains("--help") else {
            print(usage)
            exit(arguments.isEmpty ? 0 : 64)  // 64: EX_USAGE
        }
        let app = SampleApp(.fromEnvironment(), tokens: MemoryTokenStore())
        app.signIn.email = arguments[0]
        app.signIn.password = arguments[1]
        await app.signIn.submit()
        if let message = app.signIn.message {
            print("sign-in failed: \(message)")
            exit(1)
        }
        app.search.text = arguments.dropFirst(2).joined(separator: " ")
        await app.search.search()
        if let message = app.search.message { print("search failed: \(message)") }
        if let item = app.search.items.first {
            await app.favorites.toggleHeart(item.id)
            print("hearted \(item.id) (\(item.title))\(app.favorites.pendingWrites > 0 ? ", waiting to be sent" : "")")
        }
        print("hearts: \(app.favorites.hearts.sorted().joined(separator: ", "))")
    }
}
#endif
