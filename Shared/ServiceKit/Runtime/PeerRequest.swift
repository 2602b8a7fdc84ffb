import AsyncHTTPClient
import Contracts
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1

/// A GET to another service as the user who asked (their bearer token), with the request's id and, when given, in
/// its trace: how auth-service and favorites-service ask catalog-proxy about an item or a category.
public struct PeerRequest: Sendable {
    public let baseURL: String
    public let httpClient: HTTPClient

    public init(baseURL: String, httpClient: HTTPClient) {
        self.baseURL = baseURL
        self.httpClient = httpClient
    }

    /// The peer's answer (a body of at most 1 MiB); nil when it could not be reached or did not answer in 8 seconds
    /// (logged), which callers turn into their own "try again shortly".
    public func get(_ path: String, bearer: String, requestID: String, logger: Logger)
        async -> PeerAnswer?
    {
        var request = HTTPClientRequest(url: baseURL.trimmingSuffix("/") + path)
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        request.headers.add(name: "X-Request-ID", value: requestID)
        request.headers.add(name: "Accept", value: "application/json")
        do {
            let response = try await httpClient.execute(request, timeout: .seconds(8))
            let body = try await response.body.collect(upTo: 1 << 20)
            return PeerAnswer(status: response.status.code, body: Data(body.readableBytesView),
                              retryAfter: response.headers.first(name: "Retry-After"))
        } catch {
            logger.warning("peer unreachable", metadata: ["peer": "\(baseURL)", "error": "\(type(of: error))"])
            return nil
        }
    }
}

/// What a peer answered, and how its refusals reach our caller: the ones that are the user's own pass through as the
/// peer gave them (its problem type, detail and `Retry-After`); the peer's failures become the caller's own
/// "try again shortly", with the peer's `Retry-After` when it gave one. One mapping for every peer call.
public struct PeerAnswer: Sendable {
    public var status: UInt
    public var body: Data
    /// The peer's `Retry-After`, as it sent it.
    public var retryAfter: String?

    public init(status: UInt, body: Data, retryAfter: String? = nil) {
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
    }

    /// The peer's problem document, when it answered with one.
    public var problem: ProblemDetails? { try? ServiceJSON.decoder.decode(ProblemDetails.self, from: body) }

    /// A refusal that is the user's, not the peer's failure, passed on: 429 (the user's own budget at the peer is
    /// spent: its detail and `Retry-After`), 401 (the user's token failed there: it expired in between, or its
    /// session ended and the peer heard of it first). Nil for any other answer.
    public var usersOwnRefusal: ServiceProblem? {
        switch status {
        case 429:
            let problem = self.problem
            return ServiceProblem(.tooManyRequests, problem?.type ?? .rateLimited,
                                  problem?.detail ?? "Too many requests for this user; retry after the time given.",
                                  headers: [.retryAfter: retryAfter ?? "1"])
        case 401:
            return AuthenticationMiddleware.refusal(problem?.type == .tokenExpired ? .expired : .revoked)
        default:
            return nil
        }
    }

    /// The caller's "try again shortly" for a peer that failed, with the peer's `Retry-After` when it gave one.
    public func unavailable(_ problem: ServiceProblem) -> ServiceProblem {
        guard let retryAfter else { return problem }
        var passed = problem
        passed.headers[.retryAfter] = retryAfter
        return passed
    }
}
