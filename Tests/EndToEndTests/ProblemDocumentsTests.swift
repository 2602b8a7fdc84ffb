import Contracts
import Foundation
import NIOHTTP1
import Testing

extension EndToEnd {
    /// Problem documents as a client developer meets them through the gateway: the gateway's own name the request
    /// they answer, like the services' do; a path with an encoded slash is told what is wrong with it.
    @Suite struct ProblemDocumentsTests {
        @Test func theGatewaysOwnProblemsNameTheirInstance() async throws {
            let stack = try StackUnderTest.required()
            let api = StackClient(stack.gateway)
            let missing = try await api.get("/v1/no-such-route/a%20b?q=1")
            #expect(missing.status == .notFound)
            #expect(missing.problem?.type == .notFound)
            #expect(missing.problem?.instance == "/v1/no-such-route/a%20b")  // as sent, without the query

            // Percent-encoded quotes and backslashes stay encoded: the document stays JSON. (An encoded backslash is
            // refused by the gateway whatever the route, as below.)
            let quoted = try await api.get("/v1/no-such-route/a%22b%5C")
            #expect(quoted.status == .badRequest)
            #expect(quoted.problem?.instance == "/v1/no-such-route/a%22b%5C")

            // Declared larger than the gateway takes: refused before the body is read.
            let tooLarge = try await api.send(.POST, "/v1/auth/signup", body: Data(count: 1_100_000),
                                              headers: [("Content-Type", "application/json")])
            #expect(tooLarge.status == .payloadTooLarge)
            #expect(tooLarge.problem?.type == .payloadTooLarge)
            #expect(tooLarge.problem?.instance == "/v1/auth/signup")
            #expect(tooLarge.problem?.requestId.isEmpty == false)
        }

        /// The gateway routes on the decoded path but forwards the raw one, so it refuses an encoded slash before any
        /// service could read the path otherwise than it was routed (an object number has no slash either way).
        @Test func anItemIdWithAnEncodedSlashIsToldSo() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let signUp = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: uniqueEmail("slash"), password: accountPassword, experience: "rijksmuseum"))
            let app = anonymous.with(token: try signUp.decode(AuthSession.self).accessToken)

            for (method, path) in [(HTTPMethod.PUT, "/v1/favorites/rijksmuseum/SK-C%2F5"),
                                   (.GET, "/v1/catalog/rijksmuseum/items/SK-C%2F5")] {
                let refused = try await app.send(method, path, body: nil)
                #expect(refused.status == .badRequest)
                #expect(refused.problem?.type == .malformedRequest)
                #expect(refused.problem?.detail.contains("encoded slash") == true)
                #expect(refused.problem?.instance == path)
            }
        }
    }
}
