import Foundation
import Logging

/// Runs a source's ``SourceStep``s: each request through its upstream's client (key, limits, breaker, retries) for the
/// caller, identical requests made once (``Coalescer``, under `upstream|<key>`), and answers the request marks as
/// shared read from and kept in PostgreSQL for every replica (``SharedAnswers``).
struct StepRunner: Sendable {
    let clients: [UpstreamName: UpstreamClient]
    let shared: SharedAnswers
    let coalescer: Coalescer

    /// How long one replica's claim on a shared request holds the others back: about one slow attempt.
    static let claimDuration: TimeInterval = 5

    /// The step's value. Upstream failures are thrown as ``UpstreamFailure``; a body the source cannot read is
    /// ``UpstreamFailure/malformedBody``.
    func run<Value>(_ step: SourceStep<Value>, for caller: UpstreamCaller) async throws -> Value {
        var step = step
        while true {
            switch step {
            case .done(let value):
                return value
            case .fetch(let requests, let next):
                let answers = try await fetchAll(requests, for: caller)
                do {
                    step = try next(answers)
                } catch let failure as UpstreamFailure {
                    throw failure
                } catch {
                    // Sources throw only when a body is not what the upstream documents.
                    caller.logger.warning("an upstream body could not be read", metadata: ["error": "\(error)"])
                    throw UpstreamFailure.malformedBody
                }
            }
        }
    }

    private func fetchAll(_ requests: [UpstreamRequest], for caller: UpstreamCaller) async throws -> [UpstreamAnswer] {
        if requests.count == 1 { return [try await fetch(requests[0], for: caller)] }
        return try await withThrowingTaskGroup(of: (Int, UpstreamAnswer).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { (index, try await fetch(request, for: caller)) }
            }
            var answers = [UpstreamAnswer?](repeating: nil, count: requests.count)
            for try await (index, answer) in group { answers[index] = answer }
            return answers.compactMap { $0 }
        }
    }

    /// One request's answer; a tolerant request's failure is an answer too.
    func fetch(_ request: UpstreamRequest, for caller: UpstreamCaller) async throws -> UpstreamAnswer {
        guard request.tolerant else { return try await fetchRequired(request, for: caller) }
        do {
            return try await fetchRequired(request, for: caller)
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
    func refresh(_ request: UpstreamRequest, for caller: UpstreamCaller) async throws -> UpstreamAnswer {
        guard let client = clients[request.upstream], let key = key(for: request), let keptFor = request.sharedFor
        else {
            throw UpstreamFailure.failed("no shared upstream \(request.upstream) is configured")
        }
        let answer = try await client.get(request, for: caller)
        try await shared.store(answer, for: key, keptFor: keptFor)
        return answer
    }

    /// Joined with an identical request in flight on this replica; a shared one read from the shared store first, and
    /// fetched by one replica at a time.
    private func fetchRequired(_ request: UpstreamRequest, for caller: UpstreamCaller) async throws -> UpstreamAnswer {
        guard let client = clients[request.upstream], let key = key(for: request) else {
            throw UpstreamFailure.failed("no upstream \(request.upstream) is configured")
        }
        guard let keptFor = request.sharedFor else {
            return try await coalescer.once("upstream|\(key)") { try await client.get(request, for: caller) }.value
        }
        let shared = shared
        return try await coalescer.once("upstream|\(key)", acrossReplicasFor: Self.claimDuration, logger: caller.logger,
                                        lookup: { try await shared.answer(for: key) }) {
            let answer = try await client.get(request, for: caller)
            do {
                try await shared.store(answer, for: key, keptFor: keptFor)
            } catch {
                caller.logger.warning("could not keep a shared upstream answer", metadata: ["error": "\(error)"])
            }
            return answer
        }
    }
}
