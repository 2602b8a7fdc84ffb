import Contracts
import Crypto
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Postgres
import ServiceKit

/// The favorites API. The owner is always the token's user: no path, query or body names a user.
struct FavoritesController: Sendable {
    let store: FavoritesStore
    let catalog: CatalogLookup
    /// Wakes the async projections after a write.
    let notifier: EventNotifier
    /// Favorites one user may keep in one experience: what bounds the ids route's answer and a view's rows per user.
    let maximumFavorites: Int

    static let maximumPageSize = 100

    func register(on routes: RouterGroup<AuthenticatedContext>) {
        routes.get("", use: list)
        routes.delete("", use: clear)
        routes.get("ids", use: ids)
        routes.get("changes", use: changes)
        routes.get("popular", use: popular)
        routes.put(":experience/:itemId", use: favorite)
        routes.delete(":experience/:itemId", use: unfavorite)
    }

    enum Outcome: Sendable {
        case created(Favorite)
        case existing(Favorite)
    }

    /// 201 with the favorite the first time (and to a retry of that request, with the same `Idempotency-Key`), 200
    /// when it already was one. The item is looked up in catalog-proxy first; if that fails nothing is written.
    @Sendable func favorite(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(context.parameters.get("experience"))
        let requestedID = try Self.itemID(context.parameters.get("itemId"))
        let user = context.user.userID
        let eventID = try Self.eventID(user: user, request: request)
        // A retry of a request already applied gets its answer without the catalog, which may be down meanwhile.
        if let eventID, let original = try FavoritesStore.originalAnswer(
            in: try await store.pool.query(FavoritesStore.eventQuery(eventID, in: FavoritesStore.stream(of: user))))
        {
            return try ServiceJSON.encoder.encode(original.favorite).jsonResponse(status: original.created ? .created : .ok)
        }
        let bearer = AuthenticationMiddleware.bearerToken(in: request) ?? ""
        let item = try await catalog.item(experience: experience, id: requestedID, bearer: bearer,
                                          requestID: context.requestID, traceparent: context.traceparent,
                                          logger: context.logger)
        // Favorites are keyed by the catalog's own spelling of the id (`SK-C-5`, not `sk-c-5`), which the catalog's
        // items carry: another spelling stored here could never be unfavorited by it, nor fill its heart.
        guard item.id == requestedID else {
            throw ServiceProblem.validation([FieldError(
                field: "itemId", message: "is spelled \"\(item.id)\" in the catalog; use that spelling")])
        }
        let snapshot = FavoriteSnapshot(item: item)
        let metadata = EventMetadata(requestID: context.requestID, actor: user.uuidString.lowercased())
        let now = Date()
        let id = eventID ?? UUID.random()
        let outcome = try await store.pool.withTransaction { connection -> Outcome in
            let streamName = FavoritesStore.stream(of: user)
            var reads = [FavoritesStore.findQuery(user: user, experience: experience, itemId: item.id),
                         FavoritesStore.countQuery(user: user, experience: experience)]
            if let eventID { reads.append(FavoritesStore.eventQuery(eventID, in: streamName)) }
            let (stream, results) = try await EventStore.lock(streamName, checking: [id], reading: reads, on: connection)
            // A retried request (same Idempotency-Key) gets what the first one got, before any state check: the
            // favorite its event added (or found), even if it has been removed since.
            if eventID != nil, let original = try FavoritesStore.originalAnswer(in: results[2]) {
                return original.created ? .created(original.favorite) : .existing(original.favorite)
            }
            let current = try FavoritesStore.favorite(in: results[0])
            let count = try results[1].single().decode(Int.self, at: 0)
            guard FavoritesCommands.hasRoom(for: current, count: count, maximum: maximumFavorites) else {
                throw ServiceProblem(.conflict, .favoritesLimitReached, """
                    You already keep \(count) favorites in \(experience), as many as one may; unfavorite some first.
                    """)
            }
            // Already a favorite: nothing to write, unless the answer must be remembered for a retry.
            if let event = FavoritesCommands.favorite(snapshot, current: current, hasIdempotencyKey: eventID != nil) {
                try await FavoritesStore.record(event, id: id, user: user, in: stream, metadata: metadata, at: now,
                                          on: connection)
            }
            if let current { return .existing(current) }
            return .created(Favorite(snapshot, favoritedAt: now))  // what the view row now holds
        }
        switch outcome {
        case .created(let favorite):
            notifier.eventsAppended()
            return try ServiceJSON.encoder.encode(favorite).jsonResponse(status: .created)
        case .existing(let favorite):
            return try ServiceJSON.encoder.encode(favorite).jsonResponse()
        }
    }

    /// 204 whether or not it was a favorite.
    @Sendable func unfavorite(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(context.parameters.get("experience"))
        let itemId = try Self.itemID(context.parameters.get("itemId"))
        let user = context.user.userID
        let eventID = try Self.eventID(user: user, request: request)
        let metadata = EventMetadata(requestID: context.requestID, actor: user.uuidString.lowercased())
        let now = Date()
        let id = eventID ?? UUID.random()
        let appended = try await store.pool.withTransaction { connection -> Bool in
            let (stream, results) = try await EventStore.lock(
                FavoritesStore.stream(of: user), checking: [id],
                reading: [FavoritesStore.findQuery(user: user, experience: experience, itemId: itemId)], on: connection
            )
            if eventID != nil, stream.contains(event: id) == true { return false }  // a retry
            let isFavorite = try FavoritesStore.favorite(in: results[0]) != nil
            guard let event = FavoritesCommands.unfavorite(experience: experience, itemId: itemId,
                                                           isFavorite: isFavorite, hasIdempotencyKey: eventID != nil)
            else { return false }
            try await FavoritesStore.record(event, id: id, user: user, in: stream, metadata: metadata, at: now,
                                      on: connection)
            return true
        }
        if appended { notifier.eventsAppended() }
        return Response(status: .noContent)
    }

    /// `DELETE /v1/favorites?experience=`: every favorite of one experience, in one event. 204 whether or not there
    /// were any. A retry with the same `Idempotency-Key` changes nothing, even if favorites were added since.
    @Sendable func clear(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(request.uri.queryParameters["experience"].map(String.init))
        let user = context.user.userID
        let eventID = try Self.eventID(user: user, request: request, target: "experience=\(experience.rawValue)")
        let metadata = EventMetadata(requestID: context.requestID, actor: user.uuidString.lowercased())
        let now = Date()
        let id = eventID ?? UUID.random()
        let appended = try await store.pool.withTransaction { connection -> Bool in
            let (stream, results) = try await EventStore.lock(
                FavoritesStore.stream(of: user), checking: [id],
                reading: [FavoritesStore.countQuery(user: user, experience: experience)], on: connection
            )
            if eventID != nil, stream.contains(event: id) == true { return false }  // a retry
            let count = try results[0].single().decode(Int.self, at: 0)
            guard let event = FavoritesCommands.clear(experience: experience, favoriteCount: count,
                                                      hasIdempotencyKey: eventID != nil)
            else { return false }
            try await FavoritesStore.record(event, id: id, user: user, in: stream, metadata: metadata, at: now,
                                      on: connection)
            return true
        }
        if appended { notifier.eventsAppended() }
        return Response(status: .noContent)
    }

    /// What a page's `ETag` starts with: changed whenever a page's fields change (2: an event's `localDate` and
    /// `localTime`), so that a client holding a page of the older shape gets the new one rather than a 304.
    static let pageShape = "p2"

    /// `GET /v1/favorites?experience=&sort=&limit=&cursor=` from the per-user view; `ETag` follows the stream version.
    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let query = request.uri.queryParameters
        let experience = try Self.experience(query["experience"].map(String.init))
        var errors: [FieldError] = []
        let sortText = query["sort"].map(String.init) ?? FavoriteSort.recent.rawValue
        let sort = FavoriteSort(rawValue: sortText)
        if sort == nil {
            let known = FavoriteSort.allCases.map(\.rawValue).joined(separator: ", ")
            errors.append(FieldError(field: "sort", message: "must be one of \(known)"))
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
        let user = context.user.userID
        let etag = { @Sendable (version: Int64) in
            let page = "\(experience.rawValue)-\(sort.rawValue)-\(limit)-\(cursorText ?? "first")"
            return "\"\(Self.pageShape)-v\(version)-\(page)\""
        }
        let (version, page) = try await store.versioned(user: user, unless: { request.ifNoneMatch(etag($0)) }) {
            [cursor] connection in
            try await FavoritesStore.page(user: user, experience: experience, after: cursor, limit: limit + 1,
                                    on: connection)
        }
        guard let rows = page else {
            return Response(status: .notModified, headers: [.eTag: etag(version), .cacheControl: "private, no-cache"])
        }
        let shown = rows.prefix(limit)
        let next = rows.count > limit ? shown.last.map {
            FavoritePageCursor(after: $0.favorite, version: $0.version, sort: sort).encoded
        } : nil
        let body = FavoritePage(items: shown.map(\.favorite), nextCursor: next, version: version)
        return try ServiceJSON.encoder.encode(body)
            .jsonResponse(headers: [.eTag: etag(version), .cacheControl: "private, no-cache"])
    }

    /// `GET /v1/favorites/ids?experience=`: the hearts to fill.
    @Sendable func ids(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let experience = try Self.experience(request.uri.queryParameters["experience"].map(String.init))
        let user = context.user.userID
        let etag = { @Sendable (version: Int64) in "\"v\(version)-\(experience.rawValue)\"" }
        let (version, ids) = try await store.versioned(user: user, unless: { request.ifNoneMatch(etag($0)) }) {
            connection in try await FavoritesStore.ids(user: user, experience: experience, on: connection)
        }
        guard let ids else {
            return Response(status: .notModified, headers: [.eTag: etag(version), .cacheControl: "private, no-cache"])
        }
        return try ServiceJSON.encoder.encode(FavoriteIDs(experience: experience, itemIds: ids, version: version))
            .jsonResponse(headers: [.eTag: etag(version), .cacheControl: "private, no-cache"])
    }

    /// `GET /v1/favorites/changes?since=N`: the user's own changes after version N, oldest first.
    @Sendable func changes(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let sinceText = request.uri.queryParameters["since"].map(String.init) ?? "0"
        guard let since = Int64(sinceText), since >= 0 else {
            throw ServiceProblem.validation([FieldError(field: "since", message: "must be a version (0 or more)")])
        }
        let limit = 500
        let events = try await EventStore.read(FavoritesStore.stream(of: context.user.userID), after: since,
                                               limit: limit, pool: store.pool)
        let changes = events.compactMap { event -> FavoriteChange? in
            switch FavoriteEvent.decode(type: event.type, schemaVersion: event.schemaVersion,
                                        data: Data(event.data.utf8)) {
            case .added(let item):
                FavoriteChange(version: event.version, kind: .added, experience: ExperienceID(rawValue: item.experience),
                               itemId: item.itemId, at: event.recordedAt,
                               favorite: Favorite(item, favoritedAt: event.recordedAt))
            case .removed(let experience, let itemId):
                FavoriteChange(version: event.version, kind: .removed, experience: experience, itemId: itemId,
                               at: event.recordedAt)
            case .cleared(let experience):
                FavoriteChange(version: event.version, kind: .cleared, experience: experience, itemId: nil,
                               at: event.recordedAt)
            case .confirmed, .erased, nil: nil  // a confirmed favorite changed nothing
            }
        }
        let body = FavoriteChanges(changes: changes, version: events.last?.version ?? since,
                                   hasMore: events.count == limit)
        return try ServiceJSON.encoder.encode(body)
            .conditionalJSONResponse(to: request, headers: [.cacheControl: "private, no-cache"])
    }

    /// `GET /v1/favorites/popular?experience=&limit=`: the most favorited items of an experience, from the async
    /// projection (it may trail the latest favorites by about a second).
    @Sendable func popular(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let query = request.uri.queryParameters
        let experience = try Self.experience(query["experience"].map(String.init))
        var errors: [FieldError] = []
        let limit = Self.limit(query["limit"], default: 20, maximum: 50, errors: &errors)
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let items = try await MostFavorited.top(experience: experience, limit: limit, pool: store.pool)
        return try ServiceJSON.encoder.encode(PopularItems(experience: experience, items: items))
            .conditionalJSONResponse(to: request, headers: [.cacheControl: "private, max-age=5"])
    }

    // MARK: Input

    /// A page size: `default` when absent, at most `maximum`.
    static func limit(_ text: Substring?, default defaultLimit: Int, maximum: Int, errors: inout [FieldError]) -> Int {
        guard let text else { return defaultLimit }
        guard let value = Int(text), value >= 1 else {
            errors.append(FieldError(field: "limit", message: "must be a positive whole number"))
            return defaultLimit
        }
        return min(value, maximum)
    }

    static func experience(_ text: String?) throws -> ExperienceID {
        guard let text, !text.isEmpty else {
            throw ServiceProblem.validation([FieldError(field: "experience", message: "is required")])
        }
        let experience = ExperienceID(rawValue: text)
        guard Experience.named(experience) != nil else {
            throw ServiceProblem(.notFound, .notFound, "There is no experience \"\(text)\".")
        }
        return experience
    }

    static func itemID(_ text: String?) throws -> String {
        guard let text, (1...128).contains(text.utf8.count), !text.contains(where: { $0.isNewline || $0 == "/" })
        else { throw ServiceProblem.validation([FieldError(field: "itemId", message: "must be 1 to 128 characters")]) }
        return text
    }

    /// With an `Idempotency-Key`, the event id is derived from it, the user and the request (method, path and
    /// `target`, what else names the request's object: the query of a clear), so a retry is recognised and the same
    /// key on another request is not mistaken for one.
    static func eventID(user: UUID, request: Request, target: String = "") throws -> UUID? {
        guard let key = try request.idempotencyKey() else { return nil }
        // Without a target, the scope is spelled as it was before targets existed: ids already derived stay valid.
        let object = target.isEmpty ? request.uri.path : "\(request.uri.path) \(target)"
        let scope = "\(user.uuidString.lowercased()) \(request.method.rawValue) \(object) \(key)"
        var bytes = Array(SHA256.hash(data: Data(scope.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // a name-based UUID (version 5 layout)
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                           bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
