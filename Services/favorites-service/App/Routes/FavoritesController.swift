import Contracts
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Postgres
import ServiceKit

/// The favorites API: HTTP in and out. The writes are commands of their own (``FavoriteItem``, ``UnfavoriteItem``,
/// ``ClearFavorites``, ``WriteCard``), and so are the reads of the user's own favorites (``ListFavorites``,
/// ``ListFavoriteIDs``, ``ListChanges``). The owner is always the token's user: no path, query or body names a user.
struct FavoritesController: Sendable {
    let favoriteItem: FavoriteItem
    let unfavoriteItem: UnfavoriteItem
    let clearFavorites: ClearFavorites
    let writeCard: WriteCard
    let listFavorites: ListFavorites
    let listFavoriteIDs: ListFavoriteIDs
    let listChanges: ListChanges
    /// The most favorited items are one query of their projection (``MostFavorited/top(experience:limit:pool:)``).
    let pool: DatabasePool

    static let maximumPageSize = 100
    static let maximumQueryLength = 100

    func register(on routes: RouterGroup<AuthenticatedContext>) {
        routes.get("", use: list)
        routes.delete("", use: clear)
        routes.get("ids", use: ids)
        routes.get("changes", use: changes)
        routes.get("popular", use: popular)
        routes.put(":experience/:itemId", use: favorite)
        routes.delete(":experience/:itemId", use: unfavorite)
        routes.post("cards", use: write)
    }

    /// 201 with the favorite the first time (and to a retry of that request, with the same `Idempotency-Key`), 200
    /// when it already was one. The item is looked up in catalog-proxy first; if that fails nothing is written.
    @Sendable func favorite(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(context.parameters.get("experience"))
        let itemId = try Self.itemID(context.parameters.get("itemId"))
        let call = FavoriteItem.CatalogCall(bearer: AuthenticationMiddleware.bearerToken(in: request) ?? "",
                                            logger: context.logger)
        let answer = try await favoriteItem(itemId, in: experience, by: try Self.writeRequest(request, context),
                                            call: call)
        let body = try answer.stored.map(StoredJSON.favorite) ?? ServiceJSON.encoder.encode(answer.favorited.favorite)
        switch answer.favorited {
        case .created: return body.jsonResponse(status: .created)
        case .existing: return body.jsonResponse()
        }
    }

    /// 204 whether or not it was a favorite.
    @Sendable func unfavorite(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(context.parameters.get("experience"))
        let itemId = try Self.itemID(context.parameters.get("itemId"))
        try await unfavoriteItem(itemId, in: experience.id, by: try Self.writeRequest(request, context))
        return .noContent
    }

    /// `DELETE /v1/favorites?experience=`: 204 whether or not there were any.
    @Sendable func clear(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(request.uri.queryParameters["experience"].map(String.init))
        try await clearFavorites(experience.id, by: try Self.writeRequest(
            request, context, target: "experience=\(experience.id.rawValue)"))
        return .noContent
    }

    /// `POST /v1/favorites/cards?experience=`: 201 with the card as a favorite (and to a retry with the same
    /// `Idempotency-Key`).
    @Sendable func write(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(request.uri.queryParameters["experience"].map(String.init))
        guard experience.userWrittenItems else {
            throw ServiceProblem(.notFound, .notFound, "Users write no items of their own in \(experience.id).")
        }
        let form = try await request.decodeJSON(as: CardForm.self, context: context, allowedKeys: ["title", "facts"])
        let card: Card
        switch form.checked() {
        case .success(let checked): card = checked
        case .failure(let problems): throw ServiceProblem.validation(problems.errors)
        }
        let favorite = try await writeCard(card, in: experience, by: try Self.writeRequest(
            request, context, target: "experience=\(experience.id.rawValue)"))
        return try ServiceJSON.encoder.encode(favorite).jsonResponse(status: .created)
    }

    static func writeRequest(_ request: Request, _ context: AuthenticatedContext, target: String = "") throws
        -> WriteRequest
    {
        let eventID = try eventID(user: context.user.userID, request: request, target: target)
        return WriteRequest(user: context.user.userID, eventID: eventID, id: eventID ?? UUID.random(),
                            requestID: context.requestID)
    }

    /// What a page's `ETag` starts with: changed whenever a page's fields change (3: a book's rank, a card's facts,
    /// whether the user wrote it; 4: the item in the catalog's shape; 5: the item, when, the version, and nothing
    /// else), so that a client holding a page of the older shape gets the new one, not a 304.
    static let pageShape = "p5"

    /// `GET /v1/favorites?experience=&sort=&q=&limit=&cursor=` from the per-user view, in one of the experience's
    /// favorite sorts, filtered by text; `ETag` follows the stream version.
    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let query = request.uri.queryParameters
        let experience = try Self.experience(query["experience"].map(String.init))
        var errors: [FieldError] = []
        let offered = experience.favoriteSorts.map(\.id)
        let sortText = query["sort"].map(String.init) ?? offered.first?.rawValue ?? FavoriteSort.recent.rawValue
        let sort = FavoriteSort(sortText, offered: offered)
        if sort == nil {
            errors.append(FieldError(field: "sort", message: "must be one of \(offered.map(\.rawValue).joined(separator: ", "))"))
        }
        let text = try request.textParameter("q")
        if let text, text.count > Self.maximumQueryLength {
            errors.append(FieldError(field: "q", message: "must be at most \(Self.maximumQueryLength) characters"))
        }
        let limit = Self.limit(query["limit"], default: 50, maximum: Self.maximumPageSize, errors: &errors)
        guard let sort else { throw ServiceProblem.validation(errors) }
        var cursor = FavoritePageCursor.start(sort)
        let cursorText = query["cursor"].map(String.init)
        if let cursorText {
            if let decoded = FavoritePageCursor(cursorText, sort: sort) { cursor = decoded }
            else { errors.append(FieldError(field: "cursor", message: "is not a cursor this API returned for this sort")) }
        }
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let etag = { @Sendable (version: Int64) in
            let filter = text.map { Data($0.utf8).base64URLEncodedString() } ?? "all"
            let page = "\(experience.id.rawValue)-\(sort.rawValue)-\(filter)-\(limit)-\(cursorText ?? "first")"
            return ETag.version(Self.pageShape, "v\(version)", page)
        }
        let (version, page) = try await listFavorites(
            of: context.user.userID, in: experience.id, sort: sort, after: cursor, matching: text, limit: limit,
            unless: { request.ifNoneMatch(etag($0)) })
        guard let page else {
            return .notModified(headers: [.eTag: etag(version), .cacheControl: "no-store"])
        }
        return try StoredJSON.page(page).jsonResponse(headers: [.eTag: etag(version), .cacheControl: "no-store"])
    }

    /// `GET /v1/favorites/ids?experience=`: the hearts to fill.
    @Sendable func ids(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(request.uri.queryParameters["experience"].map(String.init))
        let etag = { @Sendable (version: Int64) in ETag.version("v\(version)", experience.id.rawValue) }
        let (version, ids) = try await listFavoriteIDs(of: context.user.userID, in: experience.id,
                                                       unless: { request.ifNoneMatch(etag($0)) })
        guard let ids else {
            return .notModified(headers: [.eTag: etag(version), .cacheControl: "no-store"])
        }
        return try ServiceJSON.encoder.encode(ids)
            .jsonResponse(headers: [.eTag: etag(version), .cacheControl: "no-store"])
    }

    /// `GET /v1/favorites/changes?since=N`: the user's own changes after version N, oldest first.
    @Sendable func changes(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let sinceText = request.uri.queryParameters["since"].map(String.init) ?? "0"
        guard let since = Int64(sinceText), since >= 0 else {
            throw ServiceProblem.validation([FieldError(field: "since", message: "must be a version (0 or more)")])
        }
        let (changes, version, hasMore) = try await listChanges(of: context.user.userID, since: since)
        return try StoredJSON.changes(changes, version: version, hasMore: hasMore)
            .conditionalJSONResponse(to: request, headers: [.cacheControl: "no-store"])
    }

    /// `GET /v1/favorites/popular?experience=&limit=`: the most favorited items of an experience, from the async
    /// projection (it may trail the latest favorites by about a second).
    @Sendable func popular(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let query = request.uri.queryParameters
        let experience = try Self.experience(query["experience"].map(String.init))
        var errors: [FieldError] = []
        let limit = Self.limit(query["limit"], default: 20, maximum: 50, errors: &errors)
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let items = try await MostFavorited.top(experience: experience.id, limit: limit, pool: pool)
        return try ServiceJSON.encoder.encode(PopularItems(experience: experience.id, items: items))
            .conditionalJSONResponse(to: request, headers: [.cacheControl: "private, max-age=5"])
    }

    // MARK: Input

    /// A page size: `default` when absent, at most `maximum`.
    static func limit(_ text: Substring?, default defaultLimit: Int, maximum: Int, errors: inout [FieldError]) -> Int {
        switch PageLimit.parse(text, default: defaultLimit, maximum: maximum) {
        case .size(let limit): return limit
        case .refused(let error):
            errors.append(error)
            return defaultLimit
        }
    }

    static func experience(_ text: String?) throws -> Experience {
        guard let text, !text.isEmpty else {
            throw ServiceProblem.validation([FieldError(field: "experience", message: "is required")])
        }
        guard let experience = Experience.named(ExperienceID(rawValue: text)) else {
            throw ServiceProblem(.notFound, .notFound, "There is no experience \"\(text)\".")
        }
        return experience
    }

    /// A path's item id, percent-decoded (`RP-T-1930-54%28V%29`), then checked: an encoded `/` is refused like one.
    /// Each refusal says what is wrong with the id.
    static func itemID(_ encoded: String?) throws -> String {
        let problem: String
        // Most ids hold no `%`: Foundation's decoding (through CoreFoundation) is skipped for them.
        if let text = encoded.flatMap({ $0.utf8.contains(UInt8(ascii: "%")) ? $0.removingPercentEncoding : $0 }) {
            if text.isEmpty || text.utf8.count > 128 {
                problem = "must be 1 to 128 bytes once percent-decoded (this one has \(text.utf8.count))"
            } else if text.contains("/") {
                problem = "contains a slash (sent as %2F); no item id of any catalog has one"
            } else if text.contains(where: \.isNewline) {
                problem = "contains a line break; no item id of any catalog has one"
            } else {
                return text
            }
        } else {
            problem = "is not valid percent-encoding (a % without two hex digits, or bytes that are not UTF-8)"
        }
        throw ServiceProblem.validation([FieldError(field: "itemId", message: problem)])
    }

    /// With an `Idempotency-Key`, the event id is derived from it, the user and the request (method, path and
    /// `target`, what else names the request's object: the query of a clear), so a retry is recognised and the same
    /// key on another request is not mistaken for one.
    static func eventID(user: UUID, request: Request, target: String = "") throws -> UUID? {
        guard let key = try request.idempotencyKey() else { return nil }
        // Without a target, the scope is spelled as it was before targets existed: ids already derived stay valid.
        let object = target.isEmpty ? request.uri.path : "\(request.uri.path) \(target)"
        let scope = "\(user.lowercasedText) \(request.method.rawValue) \(object) \(key)"
        var bytes = Array(SHA256.hash(data: Data(scope.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // a name-based UUID (version 5 layout)
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                           bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
