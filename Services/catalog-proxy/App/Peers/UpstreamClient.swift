import AsyncHTTPClient
import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

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

    /// The status and body of `request`, made for `caller` (whose share of the budgets it spends). 2xx and 404 are
    /// answers; everything else is an ``UpstreamFailure``.
    func get(_ request: UpstreamRequest, for caller: UpstreamCaller) async throws(UpstreamFailure) -> UpstreamAnswer {
        var lastFailure = UpstreamFailure.failed("no attempt made")
        for attempt in 1...max(1, settings.attempts) {
            if attempt > 1 {
                // Full jitter: replicas retrying together do not hammer a recovering upstream in step.
                try? await Task.sleep(for: .milliseconds(Int.random(in: 50...(150 * attempt))))
            }
            do throws(UpstreamFailure) {
                defer { if let left = gate.quotaLeft { metrics.quotaLeft(name.rawValue, calls: left) } }
                try await admit(user: caller.user)
            } catch {
                metrics.refused(name.rawValue, reason: error.refusalReason ?? "ledger-unavailable")
                throw error
            }
            let started = ContinuousClock.now
            do throws(UpstreamFailure) {
                let result = try await withinDeadline { () async throws(UpstreamFailure) in
                    try await concurrency.withPermit { () async throws(UpstreamFailure) in
                        try await once(request, requestID: caller.requestID)
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
                    caller.logger.warning("upstream attempt failed", metadata: [
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

    /// Passes the gate and the windows counted in PostgreSQL (the upstream's sliding windows and `user`'s share of its
    /// budgets), waiting for our own rate limit or the user's share when the wait is within
    /// ``UpstreamSettings/queueWait``.
    private func admit(user: UUID?) async throws(UpstreamFailure) {
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
