import Foundation

/// A source's answer to one question, or the upstream GETs it needs before it can go on.
///
/// This keeps every source pure however many dependent calls an answer takes (a search, then a record, then the
/// records its image hangs off): the source describes the calls and what it does with their answers, and the proxy's
/// ``StepRunner`` runs the calls through the upstream's limits, shared cache and coalescing. Tests drive a step with
/// recorded bodies and no I/O.
enum SourceStep<Value: Sendable>: Sendable {
    case done(Value)
    /// Run these requests (concurrently), then continue with their answers, in the same order.
    case fetch([UpstreamRequest], then: @Sendable ([UpstreamAnswer]) throws -> SourceStep<Value>)

    /// One request, then `next` with its answer.
    static func fetch(_ request: UpstreamRequest, then next: @escaping @Sendable (UpstreamAnswer) throws -> SourceStep)
        -> SourceStep
    {
        .fetch([request]) { answers in try next(answers[0]) }
    }

    /// This step, then `next` with its value.
    func then<Next: Sendable>(_ next: @escaping @Sendable (Value) throws -> SourceStep<Next>) -> SourceStep<Next> {
        switch self {
        case .done(let value):
            do { return try next(value) } catch { return .failed(error) }
        case .fetch(let requests, let continuation):
            return .fetch(requests) { answers in try continuation(answers).then(next) }
        }
    }

    func map<Next: Sendable>(_ transform: @escaping @Sendable (Value) throws -> Next) -> SourceStep<Next> {
        then { .done(try transform($0)) }
    }

    /// A step that fails with `error` as soon as it is run.
    static func failed(_ error: any Error) -> SourceStep {
        .fetch([]) { _ in throw error }
    }
}

/// An upstream's answer to one request: a 2xx, or a 404 (which only the source can read: "no such item" for a
/// detail, a failure for a search). Every other outcome is an ``UpstreamFailure`` that ends the step, unless the
/// request is ``UpstreamRequest/tolerant``: then it reaches the source as `failure`, for it to do without.
struct UpstreamAnswer: Sendable, Equatable {
    var status: Int
    var body: Data
    var failure: UpstreamFailure?

    init(status: Int, body: Data, failure: UpstreamFailure? = nil) {
        self.status = status
        self.body = body
        self.failure = failure
    }

    var isNotFound: Bool { status == 404 }

    static func failed(_ failure: UpstreamFailure) -> UpstreamAnswer {
        UpstreamAnswer(status: 0, body: Data(), failure: failure)
    }
}

/// The upstreams behind the sources, each with its own base URL, key and limits (``UpstreamSettings``).
struct UpstreamName: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    let rawValue: String
    var description: String { rawValue }

    static let ticketmaster = UpstreamName(rawValue: "ticketmaster")
    /// The museum's search service (`data.rijksmuseum.nl`): ids only.
    static let rijksmuseumSearch = UpstreamName(rawValue: "rijksmuseum-search")
    /// The museum's Linked Art records (`id.rijksmuseum.nl`).
    static let rijksmuseumRecords = UpstreamName(rawValue: "rijksmuseum-records")
    /// The NYT Books API (best-seller lists).
    static let nytBooks = UpstreamName(rawValue: "nyt-books")
    static let googleBooks = UpstreamName(rawValue: "google-books")
    /// A host serving the mobile phones API (the brief's own host is gone; the proxy serves a loaded copy).
    static let mobiles = UpstreamName(rawValue: "mobiles")
    /// The public flash cards endpoint.
    static let flashcards = UpstreamName(rawValue: "flashcards")
}

/// A request to an upstream, relative to that upstream's configured base URL. Only a source builds one, from
/// validated input: no caller ever chooses a host, a scheme or a path (SSRF).
struct UpstreamRequest: Sendable, Hashable {
    var upstream: UpstreamName
    /// Path below the base URL, already percent-encoded where needed.
    var path: String
    var query: [QueryItem] = []
    var accept = "application/json"
    /// When set, the answer is kept in PostgreSQL for this long, for every replica, and replicas asking for it at once
    /// make one call between them: for answers that many requests share (a search's id page, a maker's record).
    var sharedFor: TimeInterval?
    /// A request the source can do without: its failure reaches the source as an answer instead of failing the step.
    var tolerant = false

    struct QueryItem: Sendable, Hashable {
        var name: String
        var value: String
    }
}
