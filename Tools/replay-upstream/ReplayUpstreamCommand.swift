import ArgumentParser
import Foundation
import Hummingbird
import ReplayUpstream

/// Serves the recorded upstream responses on one port, for the keyless local stack: Ticketmaster's Discovery API, the
/// Rijksmuseum's search service (`/search/collection`), Linked Art records (`/<n>`) and resolver (`/id/<n>`), NYT Books
/// (`/svc/books/v3/…`), Google Books (`/books/v1/volumes`), the SCB mobile phone API (`/api/mobiles/…`) and the flash
/// cards mock API (`/api/v2/cards`).
@main
struct ReplayUpstreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-upstream",
        abstract: """
            Stand-in for Ticketmaster Discovery, the Rijksmuseum's search and Linked Art record services, NYT Books, \
            Google Books, the SCB mobile phone API and the flash cards mock API, answering from ../shared/fixtures \
            (see Tools/ReplayUpstream).
            """
    )

    @Option(help: "Address to bind.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8090
    @Option(help: "The fixtures directory.") var fixtures = "../shared/fixtures"
    @Option(help: "The host the museum's resolver (/id/<n>) redirects to, as id.rijksmuseum.nl does to data.rijksmuseum.nl (default: the host asked).")
    var museumDataHost: String?
    @Option(help: "Also serve this file's bytes as JSON at GET /__replay/static: a bare Hummingbird route, the peer of bench/catalog.sh.")
    var staticBody: String?

    func run() async throws {
        let replay = try ReplayUpstream(fixtures: URL(filePath: fixtures), museumDataHost: museumDataHost)
        let router = Router()
        replay.addRoutes(to: router)
        router.get("/health") { _, _ in "ok" }
        if let staticBody {
            let body = ByteBuffer(bytes: try Data(contentsOf: URL(filePath: staticBody)))
            router.get("/__replay/static") { _, _ in
                Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
            }
        }
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)))
        try await app.runService()
    }
}
