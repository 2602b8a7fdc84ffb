@testable import CatalogProxy
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ReplayUpstream
import ServiceKit
import TestSupport
import Testing

/// catalog-proxy against real HTTP peers: one local server plays both upstreams (the replay of the recorded
/// fixtures) and auth-service's key set and revocation list (signed with a test key).
struct CatalogHarness: Sendable {
    let client: any TestClientProtocol
    /// A second replica on the same database, with a cache of its own (`withCatalog(secondReplica: true)`).
    let otherReplica: (any TestClientProtocol)?
    let replay: ReplayUpstream
    let token: String
    /// The catalog's database (both replicas share it).
    let databaseURL: String

    static let authority = TestAuthority()

    @discardableResult
    func get(_ path: String, token: String?? = nil, headers: HTTPFields = [:],
             on replica: (any TestClientProtocol)? = nil) async throws -> TestResponse {
        var headers = headers
        if let bearer = token ?? self.token { headers[.authorization] = "Bearer \(bearer)" }
        return try await (replica ?? client).execute(uri: path, method: .get, headers: headers) { $0 }
    }

    /// Upstream requests the replay server received (control calls are not logged).
    var upstreamCalls: Int { replay.requestLog.count }

    /// The recorded phones and their images, as `catalog-proxy load mobiles` takes them.
    static let mobilesFiles = ["mobiles/harshil64-mobiles-list.json", "mobiles/unidentified-repo-mobile-1-images.json"]
        .map { Fixtures.root.appending(path: $0) }
    static let cardsFiles = [Fixtures.root.appending(path: "flashcards/bcecilio-cards-live.json")]
    /// In `environment`'s values, stands for the replay server's base URL.
    static let replayURL = "{replay}"
    /// In `environment`'s values, stands for the replay server's port.
    static let replayPort = "{replay-port}"

    /// A catalog on a throwaway database whose upstreams are the replay server; with `loadDatasets`, the recorded
    /// phones and cards are loaded first, as `scripts/stack up` loads them.
    static func withCatalog(
        environment: [String: String] = [:], secondReplica: Bool = false, loadDatasets: Bool = false,
        museumDataHost: String? = nil, userShares: Bool = false,
        _ test: @escaping @Sendable (CatalogHarness) async throws -> Void
    ) async throws {
        let replay = try ReplayUpstream(fixtures: Fixtures.root, museumDataHost: museumDataHost)
        let peers = Router()
        replay.addRoutes(to: peers)
        authority.addRoutes(to: peers)
        try await Application(router: peers).test(.live) { peerClient in
            let base = "http://127.0.0.1:\(peerClient.port!)"
            try await withTestDatabase { database in
                let reader = testConfigReader(databaseURL: database.connectionString, environment: [
                    "AUTH_URL": base, "TICKETMASTER_URL": base, "RIJKSMUSEUM_SEARCH_URL": base,
                    "RIJKSMUSEUM_RECORDS_URL": base + "/id", "NYT_BOOKS_URL": base, "NYT_BOOKS_API_KEY": "test-nyt-key",
                    "GOOGLE_BOOKS_URL": base, "FLASHCARDS_URL": base,
                    "TICKETMASTER_API_KEY": "test-ticketmaster-key",
                    "UPSTREAM_ATTEMPTS": "1", "UPSTREAM_TIMEOUT_MS": "10000",
                    // Suites run side by side on two cores: a cold page of records (two hops each, through the
                    // resolver) may take longer than the default 4 s. The suites about the deadline set their own.
                    "CATALOG_PAGE_DEADLINE_MS": "10000",
                    // The scheduled refresh of the best sellers calls the NYT on its own: off, so that suites count
                    // only their own calls; the suite about it turns it on.
                    "CATALOG_BESTSELLERS_REFRESH_SECONDS": "0",
                ]
                // Most suites drive one user hard; those about users' shares keep the service's default.
                .merging(userShares ? [:] : ["CATALOG_USER_UPSTREAM_SHARE_PERCENT": "100"]) { $1 }.merging(environment.mapValues {
                    $0.replacingOccurrences(of: replayURL, with: base)
                        .replacingOccurrences(of: replayPort, with: "\(peerClient.port!)")
                }) { $1 })
                if loadDatasets {
                    _ = try await loadDataset("mobiles", files: mobilesFiles, reader: reader)
                    _ = try await loadDataset("flashcards", files: cardsFiles, reader: reader)
                }
                let app = try await buildApplication(reader: reader)
                try await app.test(.router) { client in
                    let token = try await token()
                    guard secondReplica else {
                        return try await test(CatalogHarness(client: client, otherReplica: nil, replay: replay,
                                                             token: token, databaseURL: database.connectionString))
                    }
                    try await buildApplication(reader: reader).test(.router) { other in
                        try await test(CatalogHarness(client: client, otherReplica: other, replay: replay, token: token,
                                                     databaseURL: database.connectionString))
                    }
                }
            }
        }
    }

    static func token(user: UUID = UUID()) async throws -> String {
        try await authority.token(user: user)
    }
}

