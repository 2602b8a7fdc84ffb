import Contracts
import Foundation
import HTTPTypes
import Locking
import ServiceKit

/// A per-user budget (each replica keeps its own), refused with 429 and `Retry-After`: of catalog requests, and of
/// requests that go upstream, so that one user cannot spend the shared upstream quota for everyone.
final class UserRateLimiter: Sendable {
    private let buckets = Locked<[UUID: TokenBucket]>([:])
    let rate: Double
    let burst: Double
    /// The problem's `detail`.
    let refusal: String

    init(rate: Double, burst: Double, refusal: String) {
        self.rate = rate
        self.burst = burst
        self.refusal = refusal
    }

    func admit(_ user: UUID, now: Date = Date()) throws {
        let wait: TimeInterval? = buckets.withLock { buckets in
            if buckets.count > 100_000 { buckets.removeAll() }  // bounded memory; a reset only forgives
            var bucket = buckets[user] ?? TokenBucket(rate: rate, burst: burst, now: now)
            let wait = bucket.take(now: now)
            buckets[user] = bucket
            return wait
        }
        if let wait {
            throw ServiceProblem(.tooManyRequests, .rateLimited, refusal,
                                 headers: [.retryAfter: String(max(1, Int(wait.rounded(.up))))])
        }
    }
}
