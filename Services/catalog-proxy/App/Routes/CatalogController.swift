import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// `GET /v1/catalog/{experience}/items` (search, browse, sort, category), `…/items/{id}` and `…/categories`, for
/// signed-in users: every call may spend our upstream quota. What each experience accepts comes from its
/// ``Experience`` description, the one the app draws its screens from.
struct CatalogController: Sendable {
    let backends: [ExperienceID: CatalogBackend]
    let searchItems: SearchItems
    let itemDetail: ItemDetail
    let itemCell: ItemCell
    let listCategories: ListCategories
    let users: UserRateLimiter
    let metrics: CatalogMetrics

    static let maximumQueryLength = 100

    func register(on routes: RouterGroup<AuthenticatedContext>) {
        routes.get(":experience/items", use: search)
        routes.get(":experience/items/:id", use: detail)
        routes.get(":experience/categories", use: categories)
    }

    @Sendable func search(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (backend, experience) = try backend(context)
        let parameters = request.uri.queryParameters
        var errors: [FieldError] = []
        let text = try request.textParameter("q") ?? ""
        if text.count > Self.maximumQueryLength {
            errors.append(FieldError(field: "q", message: "must be at most \(Self.maximumQueryLength) characters"))
        } else if !text.isEmpty, experience.search == nil {
            errors.append(FieldError(field: "q", message: "is not taken: \(experience.displayName) has no search"))
        } else if text.isEmpty, !experience.browsable {
            errors.append(FieldError(field: "q", message: "is required: \(experience.displayName) lists only what is searched for (1 to \(Self.maximumQueryLength) characters)"))
        }
        var sort = experience.sorts.first?.id ?? .relevance
        if let value = parameters["sort"] {
            let offered = experience.sorts.map(\.id)
            if let chosen = offered.first(where: { $0.rawValue == String(value) }) {
                sort = chosen
            } else {
                let names = offered.map(\.rawValue).joined(separator: ", ")
                errors.append(FieldError(field: "sort", message: "must be one of \(names)"))
            }
        }
        let category = parameters["category"].map(String.init)
        if let category, experience.categories == nil {
            errors.append(FieldError(field: "category", message: "is not taken: \(experience.displayName) has no categories (\(category.prefix(40)))"))
        } else if category == nil, experience.categories?.required == true {
            errors.append(FieldError(field: "category", message: "is required: one of GET /v1/catalog/\(experience.id)/categories"))
        }
        var cursor = PageCursor(pageSize: 20)
        switch PageLimit.parse(parameters["limit"], default: cursor.pageSize, maximum: backend.maximumPageSize) {
        case .size(let limit): cursor.pageSize = limit
        case .refused(let error): errors.append(error)
        }
        let query = SearchQuery(text: text, category: category, sort: sort)
        if let text = parameters["cursor"] {
            if let decoded = PageCursor(String(text)), decoded.pageSize <= backend.maximumPageSize {
                cursor = decoded
            } else {
                errors.append(FieldError(field: "cursor", message: "is not a cursor this API returned"))
            }
        }
        if errors.isEmpty, !backend.isReachable(cursor) {
            errors.append(FieldError(field: "cursor", message: "goes deeper than the catalog lets anyone page"))
        }
        if errors.isEmpty, parameters["cursor"] != nil, cursor.search != query.fingerprint(in: experience.id) {
            errors.append(FieldError(
                field: "cursor",
                message: "belongs to another search: send it with the q, category and sort of the page that gave it"))
        }
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        try users.admit(context.user.userID)
        if let category { try await checkCategory(category, of: backend, context: context) }
        let lookup = try await searchItems(backend, query, at: cursor, for: caller(context))
        return respond(lookup, to: request, experience: backend.experience, route: "search")
    }

    @Sendable func detail(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (backend, _) = try backend(context)
        // Path parameters arrive percent-encoded (`RP-T-1930-54%28V%29`): decoded first, then held to the source's
        // id shape, so an encoded `/` or `?` is refused like a literal one.
        guard let decoded = (context.parameters.get("id") ?? "").removingPercentEncoding else {
            throw ServiceProblem.validation([FieldError(
                field: "id", message: "is not valid percent-encoding (a % without two hex digits, or bytes that are not UTF-8)")])
        }
        guard let id = backend.canonicalID(decoded) else {
            let message = decoded.contains("/") ? "contains a slash (sent as %2F); no id of this catalog has one"
                : "is not an id of this catalog"
            throw ServiceProblem.validation([FieldError(field: "id", message: message)])
        }
        // `view=cell`: the item as a list cell shows it, what favorites-service keeps of a favorite.
        let view = request.uri.queryParameters["view"].map(String.init)
        guard view == nil || view == "cell" else {
            throw ServiceProblem.validation([FieldError(field: "view", message: "must be cell, or absent for the whole detail")])
        }
        try users.admit(context.user.userID)
        let lookup = view == "cell"
            ? try await itemCell(backend, id: id, for: caller(context))
            : try await itemDetail(backend, id: id, for: caller(context))
        return respond(lookup, to: request, experience: backend.experience, route: view == "cell" ? "cell" : "detail")
    }

    @Sendable func categories(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (backend, _) = try backend(context)
        try users.admit(context.user.userID)
        let lookup = try await listCategories(backend, for: caller(context))
        return respond(lookup, to: request, experience: backend.experience, route: "categories")
    }

    private func backend(_ context: AuthenticatedContext) throws -> (CatalogBackend, Experience) {
        let name = context.parameters.get("experience") ?? ""
        guard let backend = backends[ExperienceID(rawValue: name)],
              let experience = Experience.named(backend.experience)
        else {
            throw ServiceProblem(.notFound, .notFound, "There is no experience \"\(name)\".")
        }
        return (backend, experience)
    }

    /// The signed-in user, whose share of the upstreams' budgets the request's upstream calls spend.
    private func caller(_ context: AuthenticatedContext) -> UpstreamCaller {
        UpstreamCaller(user: context.user.userID, requestID: context.requestID, logger: context.logger)
    }

    /// A category must be one the experience lists now (its list is cached, so this rarely costs a call).
    private func checkCategory(_ category: String, of backend: CatalogBackend, context: AuthenticatedContext)
        async throws
    {
        let lookup = try await listCategories(backend, for: caller(context))
        let known = try ServiceJSON.decoder.decode(CategoryList.self, from: lookup.value.body).categories
        guard known.contains(where: { $0.id == category }) else {
            throw ServiceProblem.validation([FieldError(
                field: "category", message: "\"\(category.prefix(80))\" is not one of GET /v1/catalog/\(backend.experience)/categories")])
        }
    }

    /// 200 with the body, or 304 when the client already holds it. Freshness goes in the headers: `Age`,
    /// `Cache-Control: private, max-age` (the rest of the TTL; per user, since the route needs a token) and
    /// `X-Cache` (`hit`, `miss`, `revalidating`, or `stale` when the upstream failed and the last good copy is served).
    func respond(_ lookup: ResponseCache.Lookup, to request: Request, experience: ExperienceID, route: String)
        -> Response
    {
        metrics.cacheLookup(experience: experience.rawValue, route: route, result: lookup.freshness.rawValue)
        if lookup.coalesced { metrics.coalesced(experience: experience.rawValue, route: route) }
        if route == "search", !lookup.value.isComplete { metrics.partialPage(experience: experience.rawValue) }
        var headers: HTTPFields = [
            .eTag: lookup.etag, .age: String(lookup.age),
            .cacheControl: "private, max-age=\(lookup.remainingTTL)", .xCache: lookup.freshness.rawValue,
        ]
        if request.ifNoneMatch(lookup.etag) {
            return .notModified(headers: headers)
        }
        headers[.contentType] = "application/json; charset=utf-8"
        return lookup.value.body.jsonResponse(headers: headers)
    }
}

extension HTTPField.Name {
    static let xCache = HTTPField.Name("X-Cache")!
}
