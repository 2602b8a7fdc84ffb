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
        let policy = RetryPolicy(firstDelay: 1, longestDelay: 30)
        // Equal jitter: half of the exponential fixed, half random.
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 0) == 0.5)
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 1) == 1)
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 0) == 2)
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 1) == 4)
        #expect(policy.delay(afterFailures: 4, retryAfter: nil, jitter: 0.5) == 6)
        // The server's Retry-After wins, whatever the count.
        #expect(policy.delay(afterFailures: 1, retryAfter: 120, jitter: 0) == 120)
        #expect(policy.delay(afterFailures: 5, retryAfter: 0, jitter: 1) == 0)
    }

    /// However many attempts failed, the next is never further off than the cap: 12 failures used to mean half an
    /// hour's wait.
    @Test func theWaitIsCappedHoweverManyFailed() {
        let policy = RetryPolicy()
        #expect(policy.longestDelay == 180)
        for failures in [9, 12, 15, 60, 10_000] {
            let longest = policy.delay(afterFailures: failures, jitter: 1)
            #expect(longest == 180, "after \(failures) failures")
            #expect(policy.delay(afterFailures: failures, jitter: 0) == 90)
        }
        #expect(RetryPolicy(firstDelay: 5, longestDelay: 1).longestDelay == 5)  // never below the first wait
    }

    /// Only the server's refusal takes a write out of the queue; everything that may pass later waits.
    @Test func failuresAreClassifiedAsAPhoneNeeds() {
        #expect(AttemptVerdict(FavoriteMeError.offline("no network")) == .retry(after: nil))
        #expect(AttemptVerdict(FavoriteMeError.transport("connection lost")) == .retry(after: nil))
        // A captive portal's page, or a proxy's: the write may not have arrived, its key makes a retry safe.
        #expect(AttemptVerdict(FavoriteMeError.unexpectedAnswer(status: 200, detail: "<html>")) == .retry(after: nil))
        #expect(AttemptVerdict(FavoriteMeError.refused(Self.problem(500))) == .retry(after: nil))
        #expect(AttemptVerdict(FavoriteMeError.refused(Self.problem(503, .catalogUnavailable, retryAfter: 7)))
                == .retry(after: 7))
        #expect(AttemptVerdict(FavoriteMeError.refused(Self.problem(429, .rateLimited, retryAfter: 3))) == .retry(after: 3))
        #expect(AttemptVerdict(FavoriteMeError.refused(Self.problem(408))) == .retry(after: nil))
        let notFound = Self.problem(404, .notFound)
        #expect(AttemptVerdict(FavoriteMeError.refused(notFound)) == .rejected(notFound))
        let invalid = Self.problem(422, .validationFailed)
        #expect(AttemptVerdict(FavoriteMeError.refused(invalid)) == .rejected(invalid))
        #expect(AttemptVerdict(FavoriteMeError.refused(Self.problem(401, .invalidToken))) == .stop)
        #expect(AttemptVerdict(FavoriteMeError.signedOut) == .stop)
        #expect(AttemptVerdict(FavoriteMeError.storage("full")) == .stop)
        #expect(AttemptVerdict(CancellationError()) == .stop)
    }
}
