import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Locking
import ServiceKit

/// `GET /v1/catalog/{experience}/items?q=` and `GET /v1/catalog/{experience}/items/{id}`, for signed-in users: every
/// call may spend our upstream quota.
struct CatalogController: Sendable {
    let catalog: Catalog
    let users: UserRateLimiter

    static let maximumQueryLength = 100

    func register(on routes: RouterGroup<AuthenticatedContext>) {
        routes.get(":experience/items", use: search)
        routes.get(":experience/items/:id", use: detail)
    }

    @Sendable func search(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let backend = try catalog.backend(for: context.parameters.get("experience") ?? "")
        let source = backend.source
        let parameters = request.uri.queryParameters
        var errors: [FieldError] = []
        let text = Upstream.clean(parameters["q"].map(String.init)) ?? ""
        if text.isEmpty || text.count > Self.maximumQueryLength {
            errors.append(FieldError(field: "q", message: "must be 1 to \(Self.maximumQueryLength) characters"))
        }
        var pageSize = 20
        if let limit = parameters["limit"] {
            if let value = Int(limit), value >= 1 { pageSize = min(value, source.maximumPageSize) }  // clamped
            else { errors.append(FieldError(field: "limit", message: "must be a positive whole number")) }
        }
        var page = 0
        if let cursor = parameters["cursor"] {
            if let decoded = PageCursor(String(cursor)), decoded.pageSize <= source.maximumPageSize {
                page = decoded.page
                pageSize = decoded.pageSize
            } else {
                errors.append(FieldError(field: "cursor", message: "is not a cursor this API returned"))
            }
        }
        if errors.isEmpty, !source.isReachable(page: page, pageSize: pageSize) {
            errors.append(FieldError(field: "cursor", message: "goes deeper than the catalog lets anyone page"))
        }
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        try users.admit(context.user.userID)
        let lookup = try await catalog.search(backend, text: text, page: page, pageSize: pageSize,
                                              requestID: context.requestID, logger: context.logger)
        return Self.respond(lookup, to: request)
    }

    @Sendable func detail(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let backend = try catalog.backend(for: context.parameters.get("experience") ?? "")
        guard let id = backend.source.canonicalID(context.parameters.get("id") ?? "") else {
            throw ServiceProblem.validation([FieldError(field: "id", message: "is not an id of this catalog")])
        }
        try users.admit(context.user.userID)
        let lookup = try await catalog.detail(backend, id: id, requestID: context.requestID, logger: context.logger)
        return Self.respond(lookup, to: request)
    }

    /// 200 with the body, or 304 when the client already holds it. Freshness goes in the headers: `Age`,
    /// `Cache-Control: private, max-age` (the rest of the TTL; per user, since the route needs a token) and
    /// `X-Cache` (`hit`, `miss`, `revalidating`, or `stale` when the upstream failed and the last good copy is served).
    static func respond(_ lookup: ResponseCache.Lookup, to request: Request) -> Response {
        var headers: HTTPFields = [
            .eTag: lookup.value.etag, .age: String(lookup.age),
            .cacheControl: "private, max-age=\(lookup.remainingTTL)", .xCache: lookup.freshness.rawValue,
        ]
        if request.ifNoneMatch(lookup.value.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json; charset=utf-8"
        return lookup.value.body.jsonResponse(headers: headers)
    }
}

extension HTTPField.Name {
    static let xCache = HTTPField.Name("X-Cache")!
}

/// Per-user request budget on the catalog routes (each replica keeps its own): one user cannot spend the shared
/// upstream quota for everyone.
final class UserRateLimiter: Sendable {
    private let buckets = Locked<[UUID: TokenBucket]>([:])
    let rate: Double
    let burst: Double

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    func admit(_ user: UUID, now: Date = Date()) throws {
        let wait: TimeInterval? = buckets.withLock { buckets in
            if buckets.count > 100_000 { buckets.removeAll() }  // bounded memory; a reset only forgives
            var bucket = buckets[user] ?? TokenBucket(rate: rate, burst: burst, now: now)
            let wait = bucket.take(now: now)
            buckets[user] = bucket
            return wait
        }
        if let wait {
            throw ServiceProblem(.tooManyRequests, .rateLimited, "Too many catalog requests; slow down.",
                                 headers: [.retryAfter: String(max(1, Int(wait.rounded(.up))))])
        }
    }
}
