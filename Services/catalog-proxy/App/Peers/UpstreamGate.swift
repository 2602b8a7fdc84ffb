import Foundation
import Locking

/// The limits that shield one upstream: rate, daily quota, and the circuit breaker, shared by all requests of a
/// process, and each user's share of the rate. The rate and the breaker are each replica's own (the configured rate
/// is per replica); the daily quota is shared by all replicas through its ``DailyQuotaLedger``, from which the gate
/// reserves calls a block at a time.
final class UpstreamGate: Sendable {
    private struct State {
        var bucket: TokenBucket
        /// Each user's share of `bucket`.
        var userBuckets: [UUID: TokenBucket] = [:]
        var breaker: CircuitBreaker
        var day: Int
        /// Calls reserved from today's quota and not spent yet.
        var reserved = 0
        /// Today's calls reserved by every replica, as of this replica's last reservation; nil before today's first.
        var usedByAll: Int?
        /// The ledger said today's quota is spent.
        var quotaSpent = false
        /// The reservation on its way, for `day`: one at a time, which every request that finds the gate empty waits
        /// for (a block per request would have a burst hold many blocks, and cost a statement each).
        var reservation: (task: Task<DailyQuotaLedger.Reservation, any Error>, day: Int)?
        var quotaResetAt: Date?
    }

    /// What ``admit(now:)`` does next.
    private enum Decision {
        case go
        case refuse(UpstreamFailure)
        /// Wait for the reservation of more of the quota of `day`, then decide again.
        case await(Task<DailyQuotaLedger.Reservation, any Error>, day: Int)
    }

    /// The upstream's name in the ledger.
    let upstream: String
    let dailyQuota: Int?
    let userShare: UserShare?
    private let ledger: DailyQuotaLedger
    private let state: Locked<State>

    init(upstream: String, settings: UpstreamSettings, ledger: DailyQuotaLedger, now: Date = Date()) {
        self.upstream = upstream
        dailyQuota = settings.dailyQuota
        userShare = settings.userShare
        self.ledger = ledger
        state = Locked(State(
            bucket: TokenBucket(rate: settings.requestsPerSecond, burst: settings.burst, now: now),
            breaker: CircuitBreaker(threshold: settings.breakerThreshold, cooldown: settings.breakerCooldown),
            day: Self.day(of: now)
        ))
    }

    /// Lets one call for `user` go out at `now`, or says why not. Reserving quota is a database statement, about once
    /// every ``DailyQuotaLedger/blockSize(forQuota:)`` calls; when the database cannot be reached no call goes out.
    func admit(now: Date, user: UUID? = nil) async throws(UpstreamFailure) {
        while true {
            switch state.withLock({ decide(&$0, now: now, user: user) }) {
            case .go:
                return
            case .refuse(let failure):
                throw failure
            case .await(let reservation, let day):
                let outcome = await reservation.result
                state.withLock { state in
                    // The first waiter back records the outcome; the others find it recorded.
                    guard state.reservation?.task == reservation else { return }
                    state.reservation = nil
                    // Nothing to record after a failure, or when the day ended meanwhile (its reservation is void).
                    guard case .success(let reservation) = outcome, state.day == day else { return }
                    state.reserved += reservation.calls
                    state.usedByAll = reservation.used
                    if reservation.calls == 0 { state.quotaSpent = true }
                }
                if case .failure(let error) = outcome { throw .quotaLedgerUnavailable("\(error)") }
            }
        }
    }

    private func decide(_ state: inout State, now: Date, user: UUID?) -> Decision {
        if let wait = state.breaker.refusal(now: now) { return .refuse(.circuitOpen(retryAfter: wait)) }
        if let reset = state.quotaResetAt {
            if now < reset { return .refuse(.rateLimited(retryAfter: reset.timeIntervalSince(now))) }
            state.quotaResetAt = nil
        }
        // Forward only: a request that waited across midnight still holds a `now` from the day before.
        if Self.day(of: now) > state.day {
            state.day = Self.day(of: now)
            state.reserved = 0
            state.usedByAll = nil
            state.quotaSpent = false
        }
        // Calls already reserved are spent even once the ledger has said the quota is gone (a concurrent request
        // may have reserved them just before): only with none left is the quota spent for this replica.
        if let quota = dailyQuota, state.reserved == 0 {
            if state.quotaSpent { return .refuse(.rateLimited(retryAfter: Self.nextDay(after: now).timeIntervalSince(now))) }
            if let reservation = state.reservation, reservation.day == state.day {
                return .await(reservation.task, day: reservation.day)
            }
            let (ledger, upstream, day) = (ledger, upstream, state.day)
            // Unstructured: a request cancelled while it waits does not cancel a reservation others wait for.
            let task = Task {
                try await ledger.reserve(upstream: upstream, day: Date(timeIntervalSince1970: Double(day) * 86_400),
                                         calls: DailyQuotaLedger.blockSize(forQuota: quota), quota: quota)
            }
            state.reservation = (task, day)
            return .await(task, day: day)
        }
        // The user's share first, kept only when the shared bucket lets the call go too.
        var userBucket: TokenBucket?
        if let user, let share = userShare {
            var bucket = state.userBuckets[user] ?? TokenBucket(rate: share.rate, burst: share.burst, now: now)
            if let wait = bucket.take(now: now) { return .refuse(.userShareSpent(retryAfter: wait)) }
            userBucket = bucket
        }
        if let wait = state.bucket.take(now: now) { return .refuse(.rateLimited(retryAfter: wait)) }
        if let user, let userBucket {
            if state.userBuckets.count > 100_000 { state.userBuckets.removeAll() }  // bounded; a reset only forgives
            state.userBuckets[user] = userBucket
        }
        _ = state.breaker.admit(now: now)  // last: only a call that really goes out takes a half-open trial
        if dailyQuota != nil { state.reserved -= 1 }
        return .go
    }

    func recordSuccess() { state.withLock { $0.breaker.recordSuccess() } }
    func recordFailure(now: Date) { state.withLock { $0.breaker.recordFailure(now: now) } }
    /// The calls left of today's quota for all replicas: what none had reserved at this replica's last reservation, and
    /// what this replica reserved and has not spent. nil without a daily quota, or before this replica's first
    /// reservation of the day (it knows nothing of the others' until then).
    var quotaLeft: Int? {
        guard let dailyQuota else { return nil }
        return state.withLock { state in state.usedByAll.map { dailyQuota - $0 + state.reserved } }
    }

    /// Whether the breaker refuses calls at `now`.
    func breakerIsOpen(now: Date) -> Bool { state.withLock { $0.breaker.refusal(now: now) != nil } }
    /// The upstream said its quota is spent until `until`.
    func quotaExhausted(until: Date) { state.withLock { $0.quotaResetAt = until } }

    static func day(of date: Date) -> Int { Int(date.timeIntervalSince1970 / 86_400) }
    static func nextDay(after date: Date) -> Date { Date(timeIntervalSince1970: Double(day(of: date) + 1) * 86_400) }
}
