import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

extension FaultInjection {
    /// The attacks of issue #51 sent again through the gateway, with the bodies that once froze a replica or crowded
    /// out other users: each is refused with a 4xx problem now, and the stack keeps serving everyone else.
    @Suite struct AbuseTests {
        /// A 250 KiB email of combining marks took 9.9 s for its 400, and two of 125 KiB froze a replica's
        /// `/health/live`. Now such bodies are past auth-service's 64 KiB and refused unread, one that fits is refused
        /// on its bytes, and the replicas answer throughout.
        @Test func markLadenEmailsAreRefusedAndTheReplicasStayLive() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let single = try await anonymous.send(.POST, "/v1/auth/password-reset",
                                                  json: PasswordResetRequest(email: Self.marks(250)))
            #expect(single.status == .payloadTooLarge)
            #expect(single.problem?.type == .payloadTooLarge)
            async let first = anonymous.send(.POST, "/v1/auth/password-reset", json: PasswordResetRequest(email: Self.marks(125)))
            async let second = anonymous.send(.POST, "/v1/auth/password-reset", json: PasswordResetRequest(email: Self.marks(60)))
            async let live = anonymous.get("/v1/auth/health/live")
            #expect(try await [first.status, second.status] == [.payloadTooLarge, .badRequest])
            #expect(try await second.problem?.errors?.map(\.field) == ["email"])
            #expect(try await live.status == .ok)
        }

        /// An "address" of `kib` KiB, nearly all combining marks.
        static func marks(_ kib: Int) -> String {
            "a" + String(repeating: "\u{301}", count: kib * 1024 / 2) + "@example.com"
        }

        /// A 128 KiB title took 4.2 s, a 500 KB one answered 500, and a fact of one character of 200,000 combining
        /// marks was stored for good.
        @Test func hugeCardTextIsRefusedWithA400() async throws {
            let stack = try StackUnderTest.required()
            let (client, _) = try await FaultInjection.signedInClient(stack, experience: .flashcards, label: "abuse-cards")
            let cases: [(CardDraft, String)] = [
                (CardDraft(title: String(repeating: "\u{301}", count: 64 * 1024), facts: ["one", "two"]), "title"),
                (CardDraft(title: String(repeating: "x", count: 500_000), facts: ["one", "two"]), "title"),
                (CardDraft(title: "Heavy", facts: ["one", "a" + String(repeating: "\u{301}", count: 200_000)]), "facts.1"),
            ]
            for (draft, field) in cases {
                let response = try await client.send(.POST, "/v1/favorites/cards?experience=flashcards", json: draft)
                #expect(response.status == .badRequest, "\(field)")
                #expect(response.problem?.errors?.map(\.field) == [field])
            }
            let stored = try await client.get("/v1/favorites?experience=flashcards").decode(FavoritePage.self)
            #expect(stored.items.isEmpty)
        }

        /// `/v1/favorites/mobiles/..%2F..%2Fauth%2Fme` was routed as favorites and reached auth-service.
        @Test func encodedSlashesAndDotSegmentsAreRefusedAtTheGateway() async throws {
            let stack = try StackUnderTest.required()
            let (client, _) = try await FaultInjection.signedInClient(stack, experience: .mobiles, label: "abuse-path")
            for path in ["/v1/favorites/mobiles/..%2F..%2Fauth%2Fme", "/v1/favorites/mobiles/%2e%2e/%2e%2e/auth/me",
                         "/v1/catalog/mobiles/items/1%2F..%2F2", "/v1/favorites/%2E%2E%5Cauth"] {
                let response = try await client.get(path)
                #expect(response.status == .badRequest, "\(path)")
                #expect(response.problem?.type == .malformedRequest, "\(path)")
            }
            #expect(try await client.get("/v1/auth/me").headers.first(name: "Cache-Control") == "no-store")
            #expect(try await client.get("/v1/auth/sessions").headers.first(name: "Cache-Control") == "no-store")
        }

        /// One token opened 300 change streams, every one a 200. Now each replica gives a user a few
        /// (FAVORITES_STREAMS_PER_USER, 5) and refuses more with 429, and a closed stream's place is free again.
        @Test func oneUserCannotTakeEveryChangeStream() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let session = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: uniqueEmail("abuse-streams"), password: accountPassword, experience: "mobiles"))
                .decode(AuthSession.self)
            let replicas = stack.favoritesReplicas.count
            // A client of its own: the shared one keeps at most 8 connections to a host, fewer than the streams.
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                try await Self.crowd(stack, session: session, replicas: replicas, http: http)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }

        private static func crowd(_ stack: StackUnderTest, session: AuthSession, replicas: Int, http: HTTPClient)
            async throws {
            var open: [ServerSentEvents] = []
            var refused: ServerSentEvents?
            for _ in 0..<(replicas * 5 + 1) {
                let stream = try await ServerSentEvents.open(stack.gateway, token: session.accessToken, client: http)
                if stream.status == .ok { open.append(stream) } else { refused = stream; break }
            }
            #expect(open.count <= replicas * 5, "\(open.count) streams for one user")
            #expect(refused?.status == .tooManyRequests)
            refused?.close()
            let other = try await ServerSentEvents.open(stack.gateway, token: try await FaultInjection.signedInClient(
                stack, experience: .mobiles, label: "abuse-other").client.token ?? "", client: http)
            #expect(other.status == .ok, "another user was crowded out")
            other.close()
            for stream in open { stream.close() }
            let again = try await eventually({
                let stream = try await ServerSentEvents.open(stack.gateway, token: session.accessToken, client: http)
                stream.close()
                return stream.status
            }, until: { (status: HTTPResponseStatus) in status == .ok })
            #expect(again == .ok)
            FaultInjection.report("abuse", "one user got \(open.count) streams over \(replicas) replicas, then \(refused?.status.code ?? 0)")
        }
    }
}
