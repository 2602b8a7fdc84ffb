import AsyncHTTPClient
import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// How the proxy talks to one upstream.
struct UpstreamSettings: Sendable {
    /// Scheme and host (and port) only, from configuration; every path comes from the source.
    var baseURL: String
    /// Secret: sent as the query parameter `keyParameter`, never logged.
    var apiKey: String?
    /// The query parameter that carries the key (`apikey`, `api-key`, `key`).
    var keyParameter = "key"
    var requestsPerSecond: Double
    var burst: Double
    /// Calls allowed per UTC day (the upstream's quota), if it has one.
    var dailyQuota: Int?
    /// Sliding windows counted for every replica together (``RollingCallLedger``), for an upstream that counts calls
    /// over any span of its window (the NYT's 5 a minute and 500 a day).
    var rollingLimits: [RollingLimit] = []
    /// What one user may spend of the budgets above; nil for an upstream no user's request reaches.
    var userShare: UserShare?
    /// The redirects followed (by default none).
    var redirect = UpstreamRedirect(allowing: [])
    /// Bound on one attempt, connection to last byte (enforced around the whole attempt, body included).
    var attemptTimeout: Duration
    /// Attempts for one request: retries only on timeouts, connection failures and 5xx (all requests are GETs).
    var attempts: Int
    var breakerThreshold: Int
    var breakerCooldown: TimeInterval
    var maximumBodyBytes: Int
    /// How long a call may wait for our own rate limit to let it go, rather than be refused at once: for sources whose
    /// answers take many calls in a burst (a page of records), where a short wait beats a partial page.
    var queueWait: TimeInterval = 0
    /// Calls in flight to this upstream at once, per replica (fan-outs from many requests share it).
    var maximumConcurrentCalls = 64
}

/// Why an upstream call produced no usable response. Each maps to its own problem type.
extension UpstreamFailure {
    /// Why a call never left, for ``CatalogMetrics/refused(_:reason:)``; nil for an attempt's failure.
    var refusalReason: String? {
        switch self {
        case .rateLimited: "rate-limited"
        case .userShareSpent: "user-share"
        case .circuitOpen: "circuit-open"
        case .quotaLedgerUnavailable: "ledger-unavailable"
        default: nil
        }
    }

    /// What an attempt that left came to, for ``CatalogMetrics/upstreamAttempt(_:outcome:duration:)``.
    var attemptOutcome: String {
        switch self {
        case .rateLimited: "429"
        case .rejected(let status, _) where (300..<400).contains(status): "redirect-refused"
        case .rejected: "4xx"
        case .timeout: "timeout"
        case .failed(let reason) where reason.hasPrefix("status 5"): "5xx"
        case .malformedBody: "malformed"
        default: "error"
        }
    }
}

enum UpstreamFailure: Error, Equatable {
    /// Our limiter or the upstream's quota (429): retry after the given seconds.
    case rateLimited(retryAfter: TimeInterval)
    /// The calling user has spent their share of the upstream's budget (``UserShare``): that user retries later.
    case userShareSpent(retryAfter: TimeInterval)
    /// The breaker is open after repeated failures.
    case circuitOpen(retryAfter: TimeInterval)
    case timeout
    /// Connection refused or dropped, a 5xx, or an unexpected status.
    case failed(String)
    /// The body could not be read as the source documents it.
    case malformedBody
    /// The upstream says the item does not exist.
    case notFound
    /// The upstream refused our request (a 4xx other than 404 and 429: a bug or a revoked key), or redirected it where
    /// we do not follow: not worth a retry. The status, and why.
    case rejected(Int, String)
    /// The daily quota's ledger (PostgreSQL) could not be reached, so no call may go out; with the database's error.
    case quotaLedgerUnavailable(String)
}

/// The user on whose behalf upstream calls are made, set around a request's loads (``Catalog``): calls made for no
/// user (dataset refreshes) spend no user's share. A task-local, because calls are made deep inside coalesced steps
/// and background revalidations, which inherit it from the request that started them.
enum UpstreamCaller {
    @TaskLocal static var user: UUID?
}

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

/// GETs from one upstream through its gate, with a bounded time, body and concurrency, and retries with jitter.
struct UpstreamClient: Sendable {
    let name: UpstreamName
    let settings: UpstreamSettings
    let gate: UpstreamGate
    let callLedger: RollingCallLedger
    let httpClient: HTTPClient
    let metrics: CatalogMetrics
    let concurrency: AsyncSemaphore

    init(name: UpstreamName, settings: UpstreamSettings, gate: UpstreamGate, callLedger: RollingCallLedger,
         httpClient: HTTPClient, metrics: CatalogMetrics) {
        self.name = name
        self.settings = settings
        self.gate = gate
        self.callLedger = callLedger
        self.httpClient = httpClient
        self.metrics = metrics
        concurrency = AsyncSemaphore(permits: settings.maximumConcurrentCalls)
    }

    /// The status and body of `request`. 2xx and 404 are answers; everything else is an ``UpstreamFailure``.
    func get(_ request: UpstreamRequest, requestID: String, logger: Logger) async throws(UpstreamFailure)
        -> UpstreamAnswer
    {
        var lastFailure = UpstreamFailure.failed("no attempt made")
        for attempt in 1...max(1, settings.attempts) {
            if attempt > 1 {
                // Full jitter: replicas retrying together do not hammer a recovering upstream in step.
                try? await Task.sleep(for: .milliseconds(Int.random(in: 50...(150 * attempt))))
            }
            do throws(UpstreamFailure) {
                defer { if let left = gate.quotaLeft { metrics.quotaLeft(name.rawValue, calls: left) } }
                try await admit()
            } catch {
                metrics.refused(name.rawValue, reason: error.refusalReason ?? "ledger-unavailable")
                throw error
            }
            let started = ContinuousClock.now
            do throws(UpstreamFailure) {
                let result = try await withinDeadline { () async throws(UpstreamFailure) in
                    try await concurrency.withPermit { () async throws(UpstreamFailure) in
                        try await once(request, requestID: requestID)
                    }
                }
                metrics.upstreamAttempt(name.rawValue, outcome: result.status == 404 ? "404" : "2xx",
                                        duration: ContinuousClock.now - started)
                gate.recordSuccess()
                metrics.breaker(name.rawValue, open: false)
                return result
            } catch let failure {
                metrics.upstreamAttempt(name.rawValue, outcome: failure.attemptOutcome, duration: ContinuousClock.now - started)
                lastFailure = failure
                switch failure {
                case .timeout, .failed:
                    gate.recordFailure(now: Date())
                    metrics.breaker(name.rawValue, open: gate.breakerIsOpen(now: Date()))
                    logger.warning("upstream attempt failed", metadata: [
                        "upstream": "\(name)", "path": "\(request.path)", "attempt": "\(attempt)",
                        "failure": "\(failure)",
                    ])
                    continue
                default:
                    throw failure
                }
            }
        }
        throw lastFailure
    }

    /// Passes the gate and the windows counted in PostgreSQL (the upstream's sliding windows and the calling user's
    /// share of its budgets), waiting for our own rate limit or the user's share when the wait is within
    /// ``UpstreamSettings/queueWait``.
    private func admit() async throws(UpstreamFailure) {
        let user = UpstreamCaller.user
        var budgets: [RollingCallLedger.Budget] = []
        if !settings.rollingLimits.isEmpty {
            budgets.append(.init(key: name.rawValue, limits: settings.rollingLimits, isUsers: false))
        }
        if let user, let share = settings.userShare, !share.rollingLimits.isEmpty {
            budgets.append(.init(key: "\(name.rawValue) user \(user)", limits: share.rollingLimits, isUsers: true))
        }
        var waited: TimeInterval = 0
        while true {
            do throws(UpstreamFailure) {
                try await gate.admit(now: Date(), user: user)
                if !budgets.isEmpty { try await callLedger.reserve(budgets) }
                return
            } catch let failure {
                switch failure {
                case .rateLimited(let wait), .userShareSpent(let wait):
                    guard waited + wait <= settings.queueWait else { throw failure }
                    waited += wait
                    try? await Task.sleep(for: .seconds(wait))
                default:
                    throw failure
                }
            }
        }
    }

    /// Runs one attempt, failing with ``UpstreamFailure/timeout`` when it has not finished within the attempt timeout
    /// (AsyncHTTPClient's own deadline stops at the response head; a body that trickles would outlast it).
    private func withinDeadline(_ attempt: @escaping @Sendable () async throws(UpstreamFailure) -> UpstreamAnswer)
        async throws(UpstreamFailure) -> UpstreamAnswer
    {
        let timeout = settings.attemptTimeout
        let outcome = await withTaskGroup(of: Result<UpstreamAnswer, UpstreamFailure>?.self) { group in
            group.addTask {
                do throws(UpstreamFailure) { return .success(try await attempt()) } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let outcome else { throw .timeout }
        return try outcome.get()
    }

    private func once(_ request: UpstreamRequest, requestID: String) async throws(UpstreamFailure)
        -> UpstreamAnswer
    {
        do {
            let response = try await following(url(for: request), accept: request.accept, requestID: requestID)
            let status = Int(response.status.code)
            if status == 429 {
                let body = try? await response.body.collect(upTo: 16_384)
                let now = Date()
                let until = Self.endOfRateLimit(
                    resetHeader: response.headers.first(name: "Rate-Limit-Reset"),
                    retryAfterHeader: response.headers.first(name: "Retry-After"),
                    body: body.map { Data($0.readableBytesView) } ?? Data(), now: now)
                gate.quotaExhausted(until: until)
                throw UpstreamFailure.rateLimited(retryAfter: until.timeIntervalSince(now))
            }
            let body = try await response.body.collect(upTo: settings.maximumBodyBytes)
            if (400..<500).contains(status) && status != 404 {
                if Self.isQuotaRefusal(Data(body.readableBytesView)) {
                    // A spent quota said with another status (Google Books answers 400 or 403): a pause, as for 429.
                    let until = Date().addingTimeInterval(Self.quotaRefusalPause)
                    gate.quotaExhausted(until: until)
                    throw UpstreamFailure.rateLimited(retryAfter: Self.quotaRefusalPause)
                }
                throw UpstreamFailure.rejected(status, "refused")
            }
            guard (200..<300).contains(status) || status == 404 else {
                throw UpstreamFailure.failed("status \(status)")
            }
            return UpstreamAnswer(status: status, body: Data(body.readableBytesView))
        } catch let failure as UpstreamFailure {
            throw failure
        } catch let error as HTTPClientError where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) {
            throw .timeout
        } catch is NIOTooManyBytesError {
            throw .malformedBody
        } catch {
            throw .failed("\(type(of: error))")
        }
    }

    /// The answer to a GET of `url`, redirects followed as ``UpstreamSettings/redirect`` allows (each hop within the
    /// same attempt's deadline); a redirect it does not allow is ``UpstreamFailure/rejected(_:)``.
    private func following(_ url: String, accept: String, requestID: String) async throws -> HTTPClientResponse {
        var url = url
        var hops = 0
        while true {
            var outgoing = HTTPClientRequest(url: url)
            outgoing.headers.add(name: "Accept", value: accept)
            outgoing.headers.add(name: "User-Agent", value: "favoriteme-catalog-proxy")
            outgoing.headers.add(name: "X-Request-ID", value: requestID)
            let response = try await httpClient.execute(outgoing, timeout: .init(settings.attemptTimeout))
            let status = Int(response.status.code)
            switch settings.redirect.next(status: status, location: response.headers.first(name: "Location"),
                                          from: url, hops: hops) {
            case nil:
                return response
            case .follow(let target):
                _ = try? await response.body.collect(upTo: 65_536)  // frees the connection for the next hop
                url = target
                hops += 1
            case .refuse(let reason):
                throw UpstreamFailure.rejected(status, reason)
            }
        }
    }

    /// How long an upstream that said its quota is spent (other than with a 429) is left alone.
    static let quotaRefusalPause: TimeInterval = 60

    /// Whether an error body says a quota or rate limit is spent (Google's `reason`s, in any status).
    static func isQuotaRefusal(_ body: Data) -> Bool {
        guard body.count <= 65_536 else { return false }
        let text = String(decoding: body, as: UTF8.self)
        return ["rateLimitExceeded", "dailyLimitExceeded", "quotaExceeded", "userRateLimitExceeded", "RESOURCE_EXHAUSTED"]
            .contains { text.contains("\"\($0)\"") }
    }

    /// Until when a 429 closes the upstream. Ticketmaster's gateway sends two kinds, told apart by the body's
    /// `fault.detail.errorcode`: a spent daily quota (`…QuotaViolation`), which lasts until `Rate-Limit-Reset` (epoch
    /// milliseconds), and a per-second spike arrest, which carries the same header naming the *daily* reset but only
    /// needs a short pause. So the reset is honoured for a quota violation only; otherwise a `Retry-After` in seconds
    /// (capped at an hour), else one second.
    static func endOfRateLimit(resetHeader: String?, retryAfterHeader: String?, body: Data, now: Date) -> Date {
        struct Fault: Decodable {
            struct Inner: Decodable {
                struct Detail: Decodable { var errorcode: String? }
                var detail: Detail?
            }
            var fault: Inner?
        }
        let errorCode = (try? JSONDecoder().decode(Fault.self, from: body))?.fault?.detail?.errorcode ?? ""
        if errorCode.hasSuffix("QuotaViolation"), let milliseconds = resetHeader.flatMap(Double.init) {
            let reset = Date(timeIntervalSince1970: milliseconds / 1000)
            if reset > now { return reset }
        }
        if let seconds = retryAfterHeader.flatMap(Int.init), seconds > 0 {
            return now.addingTimeInterval(TimeInterval(min(seconds, 3600)))
        }
        return now.addingTimeInterval(1)
    }

    /// Base URL from configuration, path from the source, query values percent-encoded, then the key (left out for
    /// the keys of shared answers and in-flight calls, which must not carry a secret).
    func url(for request: UpstreamRequest, withKey: Bool = true) -> String {
        var items = request.query
        if withKey, let key = settings.apiKey { items.append(.init(name: settings.keyParameter, value: key)) }
        let query = items.map { "\($0.name.percentEncodedComponent)=\($0.value.percentEncodedComponent)" }
            .joined(separator: "&")
        let base = settings.baseURL.hasSuffix("/") ? String(settings.baseURL.dropLast()) : settings.baseURL
        return base + request.path + (query.isEmpty ? "" : "?" + query)
    }
}
