import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// How a failed write is retried: what counts, how long to wait.
@Suite struct RetryPolicyTests {
    static func problem(_ status: Int, _ type: ProblemType = .internalError, retryAfter: Int? = nil) -> APIProblem {
        APIProblem(ProblemDetails(type: type, title: "t", status: status, detail: "d", requestId: "r", errors: nil),
                   retryAfter: retryAfter)
    }

    @Test func theWaitDoublesWithJitterAndHonoursRetryAfter() {
        let policy = RetryPolicy(attempts: 6, firstDelay: 1, longestDelay: 30)
        // Equal jitter: half of the exponential fixed, half random.
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 0) == 0.5)
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 1) == 1)
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 0) == 2)
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 1) == 4)
        #expect(policy.delay(afterFailures: 4, retryAfter: nil, jitter: 0.5) == 6)
        // The server's Retry-After wins, whatever the count.
        #expect(policy.delay(afterFailures: 1, retryAfter: 120, jitter: 0) == 120)
        #expect(policy.delay(afterFailures: 5, retryAfter: 0, jitter: 1) == 0)
        // A huge count does not overflow.
        #expect(policy.delay(afterFailures: 10_000, retryAfter: nil, jitter: 1).isFinite)
        #expect(RetryPolicy(attempts: 0).attempts == 1)
    }

    @Test func failuresAreClassifiedAsAPhoneNeeds() {
        #expect(AttemptVerdict(.offline("no network")) == .offline)
        #expect(AttemptVerdict(.transport("connection lost")) == .retry(after: nil))
        // A captive portal's page, or a proxy's: the write may not have arrived, its key makes a retry safe.
        #expect(AttemptVerdict(.unexpectedAnswer(status: 200, detail: "<html>")) == .retry(after: nil))
        #expect(AttemptVerdict(.refused(Self.problem(500))) == .retry(after: nil))
        #expect(AttemptVerdict(.refused(Self.problem(503, .catalogUnavailable, retryAfter: 7))) == .retry(after: 7))
        #expect(AttemptVerdict(.refused(Self.problem(429, .rateLimited, retryAfter: 3))) == .retry(after: 3))
        #expect(AttemptVerdict(.refused(Self.problem(408))) == .retry(after: nil))
        let notFound = Self.problem(404, .notFound)
        #expect(AttemptVerdict(.refused(notFound)) == .rejected(notFound))
        let invalid = Self.problem(422, .validationFailed)
        #expect(AttemptVerdict(.refused(invalid)) == .rejected(invalid))
        #expect(AttemptVerdict(.refused(Self.problem(401, .invalidToken))) == .stop)
        #expect(AttemptVerdict(.signedOut) == .stop)
        #expect(AttemptVerdict(.storage("full")) == .stop)
    }
}
