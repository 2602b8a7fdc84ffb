import Foundation

/// The body of every error response: RFC 9457 `application/problem+json`.
///
/// `type` is a stable code from ``ProblemType``: clients branch on it, never on `detail`, which is for humans.
public struct ProblemDetails: Codable, Sendable, Hashable {
    public static let mediaType = "application/problem+json"

    public var type: ProblemType
    /// Short summary of the status (`Not Found`).
    public var title: String
    public var status: Int
    /// What went wrong, in words meant for a developer reading a log or a console.
    public var detail: String
    /// The request path.
    public var instance: String?
    /// The `X-Request-ID` of the failed request: quote it when reporting a problem.
    public var requestId: String
    /// For validation problems: each offending field and what is wrong with it.
    public var errors: [FieldError]?

    public init(
        type: ProblemType, title: String, status: Int, detail: String, instance: String? = nil,
        requestId: String, errors: [FieldError]? = nil
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.requestId = requestId
        self.errors = errors
    }
}

/// One invalid field of a request body or query.
public struct FieldError: Codable, Sendable, Hashable {
    /// Dotted path of the field (`password`, `items.0.title`).
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

/// Stable problem codes. New codes may be added; existing ones never change meaning.
/// Encoded as a bare JSON string (the standard library's `Codable` for string-backed `RawRepresentable` types).
public struct ProblemType: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Request shape (400, 404, 405, 413, 415)
    /// A field is missing, has the wrong type, or breaks a rule (400). `errors` lists the fields.
    public static let validationFailed = ProblemType(rawValue: "validation-failed")
    /// The body is not valid JSON, or a query/path parameter cannot be read (400).
    public static let malformedRequest = ProblemType(rawValue: "malformed-request")
    /// No such route or resource (404).
    public static let notFound = ProblemType(rawValue: "not-found")
    /// The route exists but not for this method; `Allow` lists the methods (405).
    public static let methodNotAllowed = ProblemType(rawValue: "method-not-allowed")
    /// The body is larger than the service accepts (413).
    public static let payloadTooLarge = ProblemType(rawValue: "payload-too-large")
    /// The body is not `application/json` (415).
    public static let unsupportedMediaType = ProblemType(rawValue: "unsupported-media-type")

    // Accounts and tokens (401, 403, 409, 429)
    /// The route needs `Authorization: Bearer <access token>` and none was sent (401).
    public static let authenticationRequired = ProblemType(rawValue: "authentication-required")
    /// The access token is malformed, forged, or its session has ended: refreshing may fail too; sign in again
    /// if it does (401).
    public static let invalidToken = ProblemType(rawValue: "invalid-token")
    /// The access token was valid and has expired: refresh it and retry (401).
    public static let tokenExpired = ProblemType(rawValue: "token-expired")
    /// Wrong email or password; deliberately the same answer for both (401).
    public static let invalidCredentials = ProblemType(rawValue: "invalid-credentials")
    /// The refresh token is unknown, expired, or its session has ended: sign in again (401).
    public static let invalidRefreshToken = ProblemType(rawValue: "invalid-refresh-token")
    /// A refresh token that was already exchanged was presented again, so the session was ended (401).
    public static let refreshTokenReused = ProblemType(rawValue: "refresh-token-reused")
    /// A signed-in user re-confirming the password (to delete the account or change the password) got it wrong (403).
    public static let passwordConfirmationFailed = ProblemType(rawValue: "password-confirmation-failed")
    /// An account with this email exists (409).
    public static let emailTaken = ProblemType(rawValue: "email-taken")
    /// Too many failed sign-ins for this account or address; `Retry-After` says when to try again (429).
    public static let signInThrottled = ProblemType(rawValue: "sign-in-throttled")
    /// Too many mails asked for this address or from this client address; `Retry-After` says when to ask again (429).
    public static let mailThrottled = ProblemType(rawValue: "mail-throttled")
    /// Too many sign-ups from one client (an IPv6 /64) this hour; `Retry-After` says when the next is let in.
    public static let signUpThrottled = ProblemType(rawValue: "sign-up-throttled")
    /// The service has as much costly work (password hashing) waiting as it takes; retry after `Retry-After`.
    public static let serviceBusy = ProblemType(rawValue: "service-busy")
    /// The token of a reset or verification link is not one we issued, was used already, was replaced by a newer
    /// link, or is for another purpose: ask for a new mail (400).
    public static let invalidLinkToken = ProblemType(rawValue: "invalid-link-token")
    /// The link's token was ours but is past its lifetime: ask for a new mail (400).
    public static let expiredLinkToken = ProblemType(rawValue: "expired-link-token")
    /// The service requires a verified email (`REQUIRE_VERIFIED_EMAIL`) and this account's is not: follow the link of
    /// the verification mail, or ask for a new one, then refresh the access token (403).
    public static let emailUnverified = ProblemType(rawValue: "email-unverified")
    /// The account's email is verified already: there is nothing to send (409).
    public static let emailAlreadyVerified = ProblemType(rawValue: "email-already-verified")

    // Catalog upstreams (502, 503, 504)
    /// The upstream catalog sent an error or a body that cannot be read (502).
    public static let upstreamBadResponse = ProblemType(rawValue: "upstream-bad-response")
    /// The upstream catalog keeps failing, so calls to it are paused; `Retry-After` says for how long (503).
    public static let upstreamUnavailable = ProblemType(rawValue: "upstream-unavailable")
    /// Our request budget for the upstream (its rate limit or daily quota) is spent; `Retry-After` (503).
    public static let upstreamRateLimited = ProblemType(rawValue: "upstream-rate-limited")
    /// The upstream catalog did not answer in time (504).
    public static let upstreamTimeout = ProblemType(rawValue: "upstream-timeout")

    // Favorites (409, 503)
    /// The user has as many favorites in this experience as one may keep; unfavorite some first (409).
    public static let favoritesLimitReached = ProblemType(rawValue: "favorites-limit-reached")
    /// The user already keeps a card with this title (written or saved, compared without case or surrounding
    /// spaces): the new one is refused (409).
    public static let cardTitleTaken = ProblemType(rawValue: "card-title-taken")
    /// `changes?since=` names a version past the end of this user's log (a position kept from another account, or from
    /// before a restore): nothing after it would ever come, so sync again from 0 (409).
    public static let syncPositionAhead = ProblemType(rawValue: "sync-position-ahead")
    /// favorites-service: the user holds as many change streams open as one may (`FAVORITES_STREAMS_PER_USER`); close
    /// one first (429, `Retry-After`).
    public static let tooManyStreams = ProblemType(rawValue: "too-many-streams")
    /// catalog-proxy could not be asked about the item, so nothing was stored; retry shortly (503).
    public static let catalogUnavailable = ProblemType(rawValue: "catalog-unavailable")

    // Availability (429, 500, 503)
    /// Too many requests; `Retry-After` says when to try again (429).
    public static let rateLimited = ProblemType(rawValue: "rate-limited")
    /// A bug on our side; the request id finds it in the logs (500).
    public static let internalError = ProblemType(rawValue: "internal-error")
    /// The database is down, restarting or saturated; retry shortly (503).
    public static let databaseUnavailable = ProblemType(rawValue: "database-unavailable")
    /// A dependency of the service does not answer, so it is not ready to serve (503).
    public static let notReady = ProblemType(rawValue: "not-ready")
    /// The gateway could not reach any replica of the service behind the route (502 or 503).
    public static let serviceUnreachable = ProblemType(rawValue: "service-unreachable")
    /// The service behind the route did not answer the gateway in time (504).
    public static let serviceTimeout = ProblemType(rawValue: "service-timeout")
}
