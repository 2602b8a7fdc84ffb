import Foundation
import Locking
import Logging

/// Runs a source's ``SourceStep``s: each request through its upstream's client (key, limits, breaker, retries),
/// identical requests in flight at once made only once on this replica, and answers the request marks as shared read
/// from and kept in PostgreSQL, fetched by one replica at a time (``FetchClaims``).
struct StepRunner: Sendable {
    let clients: [UpstreamName: UpstreamClient]
    let shared: SharedAnswers
    let claims: FetchClaims
    private let inFlight = Locked<[String: Task<UpstreamAnswer, any Error>]>([:])

    init(clients: [UpstreamName: UpstreamClient], shared: SharedAnswers, claims: FetchClaims) {
        self.clients = clients
        self.shared = shared
        self.claims = claims
    }

    /// How long one replica's claim on a shared request holds the others back: about one slow attempt.
    static let claimDuration: TimeInterval = 5

    /// The step's value. Upstream failures are thrown as ``UpstreamFailure``; a body the source cannot read is
    /// ``UpstreamFailure/malformedBody``.
    func run<Value>(_ step: SourceStep<Value>, requestID: String, logger: Logger) async throws -> Value {
        var step = step
        while true {
            switch step {
            case .done(let value):
                return value
            case .fetch(let requests, let next):
                let answers = try await fetchAll(requests, requestID: requestID, logger: logger)
                do {
                    step = try next(answers)
                } catch let failure as UpstreamFailure {
                    throw failure
                } catch {
                    // Sources throw only when a body is not what the upstream documents.
                    logger.warning("an upstream body could not be read", metadata: ["error": "\(error)"])
                    throw UpstreamFailure.malformedBody
                }
            }
        }
    }

    private func fetchAll(_ requests: [UpstreamRequest], requestID: String, logger: Logger) async throws
        -> [UpstreamAnswer]
    {
        if requests.count == 1 { return [try await fetch(requests[0], requestID: requestID, logger: logger)] }
        return try await withThrowingTaskGroup(of: (Int, UpstreamAnswer).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { (index, try await fetch(request, requestID: requestID, logger: logger)) }
            }
            var answers = [UpstreamAnswer?](repeating: nil, count: requests.count)
            for try await (index, answer) in group { answers[index] = answer }
            return answers.compactMap { $0 }
        }
    }

    /// One request's answer: joined with an identical one in flight on this replica, else from the shared store, else
    /// from the upstream.
    func fetch(_ request: UpstreamRequest, requestID: String, logger: Logger) async throws -> UpstreamAnswer {
        guard request.tolerant else { return try await fetchRequired(request, requestID: requestID, logger: logger) }
        do {
            return try await fetchRequired(request, requestID: requestID, logger: logger)
        } catch let failure as UpstreamFailure {
            return .failed(failure)
        }
    }

    /// The key under which `request`'s answer is shared and joined: the upstream, `Accept`, and the URL without any
    /// key. Nil for an upstream that is not configured.
    func key(for request: UpstreamRequest) -> String? {
        clients[request.upstream].map {
            "\(request.upstream)|\(request.accept)|\($0.url(for: request, withKey: false))"
        }
    }

    /// Fetches `request` (one marked `sharedFor`) from its upstream whatever the shared store holds, and keeps the
    /// answer there for every replica: a scheduled refresh, made before the kept answer expires.
    func refresh(_ request: UpstreamRequest, requestID: String, logger: Logger) async throws -> UpstreamAnswer {
        guard let client = clients[request.upstream], let key = key(for: request), let keptFor = request.sharedFor
        else {
            throw UpstreamFailure.failed("no shared upstream \(request.upstream) is configured")
        }
        let answer = try await client.get(request, requestID: requestID, logger: logger)
        try await shared.store(answer, for: key, keptFor: keptFor)
        return answer
    }

    private func fetchRequired(_ request: UpstreamRequest, requestID: String, logger: Logger) async throws
        -> UpstreamAnswer
    {
        guard let client = clients[request.upstream], let key = key(for: request) else {
            throw UpstreamFailure.failed("no upstream \(request.upstream) is configured")
        }
        let inFlight = inFlight
        let task = inFlight.withLock { tasks -> Task<UpstreamAnswer, any Error> in
            if let running = tasks[key] { return running }
            // Unstructured: a request cancelled while it waits does not cancel a call others wait for.
            let task = Task {
                defer { _ = inFlight.withLock { $0.removeValue(forKey: key) } }
                return try await fetchOnce(request, key: key, client: client, requestID: requestID, logger: logger)
            }
            tasks[key] = task
            return task
        }
        return try await task.value
    }

    private func fetchOnce(_ request: UpstreamRequest, key: String, client: UpstreamClient, requestID: String,
                           logger: Logger) async throws -> UpstreamAnswer
    {
        guard let keptFor = request.sharedFor else {
            return try await client.get(request, requestID: requestID, logger: logger)
        }
        let shared = shared
        let lookup: () async throws -> UpstreamAnswer? = { try await shared.answer(for: key) }
        do {
            if let answer = try await lookup() { return answer }
        } catch {
            logger.warning("could not read a shared upstream answer", metadata: ["error": "\(error)"])
        }
        return try await claims.once(key, claimFor: Self.claimDuration, logger: logger, lookup: lookup) {
            let answer = try await client.get(request, requestID: requestID, logger: logger)
            do {
                try await shared.store(answer, for: key, keptFor: keptFor)
            } catch {
                logger.warning("could not keep a shared upstream answer", metadata: ["error": "\(error)"])
            }
            return answer
        }
    }
}
