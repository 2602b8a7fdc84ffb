import ArgumentParser
import Foundation
import Hummingbird
import ReplayUpstream

/// Serves the recorded Ticketmaster and Rijksmuseum responses on one port, for the keyless local stack: Ticketmaster's
/// Discovery API, the museum's search service (`/search/collection`) and its Linked Art records (`/id/<n>`).
@main
struct ReplayUpstreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-upstream",
        abstract: """
            Stand-in for Ticketmaster Discovery and the Rijksmuseum's search and Linked Art record services, answering \
            from ../shared/fixtures (see Tools/ReplayUpstream).
            """
    )

    @Option(help: "Address to bind.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8090
    @Option(help: "The fixtures directory.") var fixtures = "../shared/fixtures"
    @Option(help: "Also serve this file's bytes as JSON at GET /__replay/static: a bare Hummingbird route, the peer of bench/catalog.sh.")
    var staticBody: String?

    func run() async throws {
        let replay = try ReplayUpstream(fixtures: URL(filePath: fixtures))
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
