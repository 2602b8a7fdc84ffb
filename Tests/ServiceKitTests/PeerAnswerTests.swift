import Contracts
import Foundation
import HTTPTypes
@testable import ServiceKit
import Testing

/// How a peer's answer reaches our caller: the user's own refusals as the peer gave them, the peer's failures as our
/// "try again shortly" with the peer's Retry-After.
@Suite struct PeerAnswerTests {
    static func problem(_ type: ProblemType, _ status: Int, _ detail: String) -> Data {
        let document = ProblemDetails(type: type, title: "t", status: status, detail: detail, requestId: "r")
        return (try? ServiceJSON.encoder.encode(document)) ?? Data()
    }

    @Test func theUsersOwnBudgetPassesThroughWithItsRetryAfter() throws {
        let answer = PeerAnswer(status: 429, body: Self.problem(.rateLimited, 429, "Your share is spent."), retryAfter: "7")
        let refusal = try #require(answer.usersOwnRefusal)
        #expect(refusal.status == .tooManyRequests && refusal.type == .rateLimited)
        #expect(refusal.detail == "Your share is spent.")
        #expect(refusal.headers[.retryAfter] == "7")
        // Without a Retry-After of the peer's, the shortest sensible wait.
        #expect(PeerAnswer(status: 429, body: Data()).usersOwnRefusal?.headers[.retryAfter] == "1")
    }

    @Test func aTokenRefusedThereIsTheCallersToken() throws {
        let expired = PeerAnswer(status: 401, body: Self.problem(.tokenExpired, 401, "expired"))
        #expect(expired.usersOwnRefusal?.type == .tokenExpired)
        let revoked = PeerAnswer(status: 401, body: Self.problem(.invalidToken, 401, "ended"))
        #expect(revoked.usersOwnRefusal?.type == .invalidToken)
    }

    @Test func thePeersFailureIsOursWithItsRetryAfter() {
        let ours = ServiceProblem(.serviceUnavailable, .catalogUnavailable, "retry shortly", headers: [.retryAfter: "2"])
        let failed = PeerAnswer(status: 503, body: Self.problem(.upstreamUnavailable, 503, "down"), retryAfter: "30")
        #expect(failed.usersOwnRefusal == nil)
        #expect(failed.unavailable(ours).headers[.retryAfter] == "30")
        #expect(failed.unavailable(ours).type == .catalogUnavailable)
        #expect(PeerAnswer(status: 500, body: Data()).unavailable(ours).headers[.retryAfter] == "2")
    }
}
