import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a call can fail with, as a value: the server's refusal (its problem document, typed), a failure on the
/// way (the server may or may not have seen the request), or no signed-in user. A call whose task is cancelled throws
/// `CancellationError` instead, never one of these: a search the user typed past is not an error to show.
///
/// `errorDescription` (``LocalizedError``) is a sentence for the user; ``description`` is for logs and developers.
public enum FavoriteMeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server answered with a problem (RFC 9457): its `type` is what to branch on.
    case refused(APIProblem)
    /// The server could not be reached at all (no network, no route, nothing listening): the request never left.
    /// Writes made with ``FavoriteMeClient/favorite(_:in:)`` and friends wait in the queue instead.
    case offline(String)
    /// The request or its answer was lost on the way (timed out, connection dropped): the server may have acted.
    /// Writes are sent again with the same key, which the server applies once.
    case transport(String)
    /// The server answered with something that is not what its contract says (a captive portal's page, a proxy).
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

    /// Whether the server could not be reached or the exchange was cut: the device is offline as far as the user is
    /// concerned (what an app's offline banner follows).
    public var isConnectivity: Bool {
        switch self {
        case .offline, .transport, .unexpectedAnswer: true
        case .refused(let problem): problem.status >= 500
        case .signedOut, .storage: false
        }
    }
}

extension FavoriteMeError: LocalizedError {
    public var errorDescription: String? {
        switch self {
        case .refused(let problem): problem.detail
        case .offline: "You're offline."
        case .transport: "The connection to the server was lost."
        case .unexpectedAnswer: "The network answered with something other than FavoriteMe."
        case .signedOut: "You're signed out."
        case .storage: "This device's storage could not be used."
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .refused(let problem) where problem.retryAfter != nil:
            "Try again in \(problem.retryAfter ?? 0) seconds."
        case .refused(let problem) where problem.status >= 500: "Try again in a moment."
        case .refused: nil
        case .offline, .transport:
            "Your favorites on this device still work; changes are sent when the connection returns."
        case .unexpectedAnswer:
            "If this network needs a sign-in page (a café's Wi-Fi), open it in a browser; changes wait until then."
        case .signedOut: "Sign in again."
        case .storage: "Free some space on the device, then try again."
        }
    }
}

extension FavoriteMeClient {
    /// A failure on the way, as the error it is: `CancellationError` when the calling task was cancelled (URLSession
    /// reports that as a cancelled URLError), offline when the request cannot have left, else transport.
    static func failure(_ error: any Error) -> any Error {
        if error is CancellationError { return error }
        if let error = error as? URLError {
            if error.code == .cancelled && Task.isCancelled { return CancellationError() }
            let detail = "\(error.code.rawValue) \(error.localizedDescription)"
            return neverLeft.contains(error.code) ? FavoriteMeError.offline(detail) : FavoriteMeError.transport(detail)
        }
        if let error = error as? FavoriteMeError { return error }
        return FavoriteMeError.transport("\(error)")
    }

    /// Failures where the request cannot have reached the server: no network, no route, nothing listening.
    private static let neverLeft: Set<URLError.Code> = [
        .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .dataNotAllowed,
        .internationalRoamingOff, .callIsActive,
    ]

    /// A non-2xx answer: its problem document as a refusal, or what else came.
    static func refusal(status: Int, body: Data, retryAfter: String?) -> FavoriteMeError {
        if let problem = try? JSONCoding.decoder.decode(ProblemDetails.self, from: body) {
            return .refused(APIProblem(problem, retryAfter: retryAfter.flatMap { Int($0) }))
        }
        return .unexpectedAnswer(status: status, detail: String(decoding: body.prefix(200), as: UTF8.self))
    }
}

/// A problem document as the client received it, with the HTTP status it came with.
public struct APIProblem: Sendable, Hashable {
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
