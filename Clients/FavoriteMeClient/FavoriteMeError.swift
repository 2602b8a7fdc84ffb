import Contracts
import Foundation

/// Everything a call can fail with, as a value: the server's refusal (its problem document, typed), a failure on the
/// way (the server may or may not have seen the request), or no signed-in user.
public enum FavoriteMeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with a problem (RFC 9457): its `type` is what to branch on.
    case refused(APIProblem)
    /// The server could not be reached at all (no network, no route, nothing listening): the request never left.
    /// Writes made with ``FavoriteMeClient/favorite(_:in:)`` and friends wait in the queue instead.
    case offline(String)
    /// The request or its answer was lost on the way (timed out, connection dropped): the server may have acted.
    /// Writes are sent again with the same key, which the server applies once.
    case transport(String)
    /// The server answered with something that is not what its contract says (a bug, or a proxy in between).
    case unexpectedAnswer(status: Int, detail: String)
    /// No user is signed in, or the session ended (signed out elsewhere, refresh token reused or expired): sign in.
    case signedOut
    /// The device's own storage (the session, the queue) could not be read or written.
    case storage(String)

    public var description: String {
        switch self {
        case .refused(let problem): "\(problem.status) \(problem.type): \(problem.detail) (request \(problem.requestId))"
        case .offline(let detail): "could not reach the server: \(detail)"
        case .transport(let detail): "the exchange with the server was cut: \(detail)"
        case .unexpectedAnswer(let status, let detail): "unexpected answer \(status): \(detail)"
        case .signedOut: "not signed in"
        case .storage(let detail): "the device's storage failed: \(detail)"
        }
    }

    /// The server's `Retry-After`, in seconds, when it refused the request and said when to try again.
    var retryAfter: Int? {
        if case .refused(let problem) = self { return problem.retryAfter }
        return nil
    }

    /// The problem's type when the server refused the request.
    public var problemType: ProblemType? {
        if case .refused(let problem) = self { return problem.type }
        return nil
    }
}

/// A problem document as the client received it, with the HTTP status it came with.
public struct APIProblem: Sendable, Equatable {
    public var type: ProblemType
    public var status: Int
    public var title: String
    public var detail: String
    public var requestId: String
    public var errors: [FieldError]
    /// `Retry-After`, in seconds, when the server said when to try again.
    public var retryAfter: Int?

    public init(_ details: ProblemDetails, retryAfter: Int?) {
        type = details.type
        status = details.status
        title = details.title
        detail = details.detail
        requestId = details.requestId
        errors = details.errors ?? []
        self.retryAfter = retryAfter
    }

    /// Whether asking again later cannot change the answer: a client error other than a missing session, a budget to
    /// wait for or an email still to verify (5xx and 429 may pass, 401 needs a sign-in first, `email-unverified` a
    /// click on the mailed link).
    public var isFinal: Bool {
        (400..<500).contains(status) && status != 401 && status != 408 && status != 429 && type != .emailUnverified
    }
}
