import AsyncHTTPClient
import Contracts
import FavoriteMeClient
import Foundation
@testable import FavoritesService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Locking
import NIOCore
import NIOHTTP1
import ServiceKit
import TestSupport
import Testing

/// The client library's live changes across access-token refreshes: tokens that live two seconds, so the server ends
/// the stream with `token-expired` again and again, and each time the library refreshes and resumes from its own
/// position. Every change made meanwhile arrives once, in order. The gateway in front is a small proxy: the stand-in
/// for auth-service answers `/v1/auth/refresh`, favorites-service (served on a port) the rest.
@Suite struct LiveChangesRefreshTests {
    @Test(.timeLimit(.minutes(1))) func liveChangesOutliveTheirAccessTokens() async throws {
        try await FavoritesHarness.run(mode: .live) { api in
            let user = UserProfile(id: UUID(), email: "tablet@example.com", experience: .mobiles, preferences: [:],
                                   createdAt: Date())
            let favorites = "http://127.0.0.1:\(try #require(api.client.port))"
            let refreshes = Locked(0)
            let router = Router()
            router.post("/v1/auth/refresh") { _, _ -> Response in
                refreshes.withLock { $0 += 1 }
                let session = AuthSession(user: user, accessToken: try await api.authority.token(user: user.id, lifetime: 2),
                                          refreshToken: "refresh-\(UUID())", expiresIn: 2, sessionId: UUID())
                return try ServiceJSON.encoder.encode(session).jsonResponse()
            }
            router.get("/v1/favorites/**") { request, _ in try await Self.forward(request, to: favorites) }
            try await Application(router: router).test(.live) { gateway in
                let tokens = MemoryTokenStore()
                await tokens.save(StoredSession(
                    accessToken: try await api.authority.token(user: user.id, lifetime: 2), refreshToken: "first",
                    accessTokenExpiresAt: Date().addingTimeInterval(2), user: user))
                let port = try #require(gateway.port)
                let tablet = FavoriteMeClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)")),
                                              tokens: tokens, timeout: 5)
                let phone = FavoritesHarness.User(id: user.id, token: try await api.authority.token(user: user.id))
                var live = tablet.liveChanges(in: .mobiles).makeAsyncIterator()
                var connections = 0
                var received: [FavoriteChange] = []
                let writes: [(HTTPRequest.Method, String)] = [(.put, "1"), (.put, "2"), (.delete, "1"), (.put, "3")]
                for (index, (method, id)) in writes.enumerated() {
                    // Each write a little after the tablet's token expired: its stream has to have come back.
                    try await Task.sleep(for: .milliseconds(2300))
                    #expect(try await api.call(method, "/v1/favorites/mobiles/\(id)", as: phone).status.code < 300)
                    while received.count < index + 1 {
                        switch await live.next() {
                        case .connected: connections += 1
                        case .changed(let change): received.append(change)
                        case .resynced, .disconnected: continue
                        case nil: throw TestSupportError("the live changes ended")
                        }
                    }
                }
                #expect(received.map(\.itemId) == writes.map(\.1))
                #expect(received.map(\.kind) == [.added, .added, .removed, .added])
                #expect(received.map(\.version) == [1, 2, 3, 4])
                #expect(refreshes.withLock { $0 } >= 3)
                #expect(connections >= 4)
                #expect(await tablet.hearts(in: .mobiles) == ["2", "3"])
            }
        }
    }

    /// The request, sent on to `base` as it came; the answer streamed back as it arrives.
    static func forward(_ request: Request, to base: String) async throws -> Response {
        var upstream = HTTPClientRequest(url: base + request.uri.description)
        upstream.method = .init(rawValue: request.method.rawValue)
        for field in request.headers { upstream.headers.add(name: field.name.canonicalName, value: field.value) }
        let answer = try await HTTPClient.shared.execute(upstream, timeout: .seconds(30))
        var headers = HTTPFields()
        for (name, value) in answer.headers where !["transfer-encoding", "connection", "content-length"]
            .contains(name.lowercased()) {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        return Response(status: .init(code: Int(answer.status.code)), headers: headers,
                        body: ResponseBody(asyncSequence: answer.body))
    }
}
