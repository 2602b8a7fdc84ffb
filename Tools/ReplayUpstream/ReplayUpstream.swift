import Foundation
import HTTPTypes
import Hummingbird
import Locking
import NIOCore

/// A stand-in for the Ticketmaster Discovery API, the Rijksmuseum's key-less Linked Art data services (its search
/// service and its records), the NYT Books API, Google Books' volume search, the SCB mobile phone test API and the
/// flash cards mock API, that answers from the recorded responses in `../shared/fixtures`, over real HTTP, on the
/// upstreams' own paths: only the base URL differs from the real thing. The keyless local stack uses it, and so do the
/// catalog tests, which also inject faults and read the request log.
///
/// Upstream paths:
/// - `GET /discovery/v2/events[.json]`, `GET /discovery/v2/events/:id[.json]`: Ticketmaster, `apikey` required.
/// - `GET /search/collection` (real base `https://data.rijksmuseum.nl`): the museum's search, no key.
/// - `GET /:number` (real base `https://data.rijksmuseum.nl`): one Linked Art record, no key, JSON-LD whatever the
///   `Accept`, as the museum's metadata host serves it.
/// - `GET /id/:number` (real base `https://id.rijksmuseum.nl`, path `/<n>`): the museum's resolver. A request for
///   JSON-LD is sent on (303 See Other) to the record on the data host, `http://<data host>/<n>`: the host the replay
///   was built with (`museumDataHost`), else the request's own, on the request's port. Any other request is sent (303)
///   to the website, here `/__replay/redirected`, so a client that forgets the header fails visibly in the log.
/// - `GET /svc/books/v3/lists/names.json`, `GET /svc/books/v3/lists/current/<list>.json`,
///   `GET /svc/books/v3/lists.json?list=<list>`, `GET /svc/books/v3/lists/full-overview.json` and `…/overview.json`
///   (real base `https://api.nytimes.com`): NYT Books, `api-key` required; lists other than hardcover fiction are
///   synthesized from the recorded books (``NYTBooksFixtures``), the overviews composed from the lists
///   (``NYTOverview``).
/// - `GET /books/v1/volumes?q=` (real base `https://www.googleapis.com`): Google Books, `key` optional; the keys `spent`
///   and `spent400` get the quota errors (``GoogleBooksFixtures``).
/// - `GET /api/mobiles/`, `GET /api/mobiles/<id>/`, `GET /api/mobiles/<id>/images/` (trailing slash optional): the SCB
///   test API, no key, its host gone; phones' images other than phone 1's are stand-ins (``MobilesFixtures``).
/// - `GET /api/v2/cards` (real base `https://5daf8b36f2946f001481d81c.mockapi.io`): the flash cards, no key.
///
/// Of the museum's answers, only a few are real: the Night Watch's object, visual item and digital object, two more
/// objects without a recorded image (200117708, 2001), Rembrandt's Person record, and two search pages, served byte
/// for byte. Every other object is a stand-in made from an artwork of the retired keyed API's recordings
/// (`rijksmuseum/legacy`), with the legacy image URL at the end of its image chain; other searches are synthesized
/// from the real and stand-in objects together (``RijksmuseumFixtures``).
///
/// Control endpoints (not upstream paths), for tests, the local stack and fault runs:
/// - `GET /__replay/requests`, `DELETE /__replay/requests`: the request log (API keys redacted, `Accept` kept).
/// - `POST /__replay/faults` with a ``Fault``, `DELETE /__replay/faults`: faults for the next matching requests.
public final class ReplayUpstream: Sendable {
    /// One injected fault, applied to requests whose path starts with `pathPrefix` (any upstream path when absent).
    public struct Fault: Codable, Sendable, Equatable {
        public enum Body: String, Codable, Sendable {
            /// 200 with a body that is not JSON.
            case malformed
            /// 200 with an HTML page, as a load balancer in front of an API might send.
            case html
            /// The real status and headers, then half the body and a closed connection.
            case truncated
            /// The real answer, its body sent 64 bytes every 100 ms: only a deadline on the whole response stops it.
            case trickle
        }

        public var pathPrefix: String?
        /// Wait this long before answering.
        public var delayMs: Int?
        /// Answer with this status (429 and 5xx get bodies shaped like the upstream's; 3xx a `Location`).
        public var status: Int?
        public var body: Body?
        /// With `status`: a `Retry-After` of this many seconds, as a server that says when to come back sends it
        /// (Ticketmaster's 429s carry none; Google's and most gateways' may).
        public var retryAfter: Int?
        /// How many requests it applies to; until cleared when absent.
        public var times: Int?

        public init(pathPrefix: String? = nil, delayMs: Int? = nil, status: Int? = nil, body: Body? = nil,
                    retryAfter: Int? = nil, times: Int? = nil) {
            self.pathPrefix = pathPrefix
            self.delayMs = delayMs
            self.status = status
            self.body = body
            self.retryAfter = retryAfter
            self.times = times
        }
    }

    /// A request as the log shows it: key values never appear.
    public struct LoggedRequest: Codable, Sendable, Equatable {
        public var method: String
        public var path: String
        public var query: [String: String]
        /// The `Accept` header as sent, absent when there was none: shows whether a client asked the museum's
        /// records for JSON-LD.
        public var accept: String?
    }

    let fixtures: FixtureCatalog
    /// The host the resolver sends record ids to (as `data.rijksmuseum.nl` is to `id.rijksmuseum.nl`); nil: the host
    /// the request was sent to.
    let museumDataHost: String?
    private let faults = Locked<[Fault]>([])
    private let requests = Locked<[LoggedRequest]>([])

    public init(fixtures root: URL, museumDataHost: String? = nil) throws {
        fixtures = try FixtureCatalog.loaded(root: root)
        self.museumDataHost = museumDataHost
    }

    public var requestLog: [LoggedRequest] { requests.withLock { $0 } }
    public func clearLog() { requests.withLock { $0.removeAll() } }
    public func inject(_ fault: Fault) { faults.withLock { $0.append(fault) } }
    public func clearFaults() { faults.withLock { $0.removeAll() } }

    /// Adds the upstream and control routes to `router`.
    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/__replay/requests") { _, _ in try Self.json(self.requestLog) }
        router.delete("/__replay/requests") { _, _ in self.clearLog(); return HTTPResponse.Status.noContent }
        router.post("/__replay/faults") { request, context -> HTTPResponse.Status in
            self.inject(try await request.decode(as: Fault.self, context: context))
            return .created
        }
        router.delete("/__replay/faults") { _, _ in self.clearFaults(); return HTTPResponse.Status.noContent }
        router.get("/__replay/redirected") { request, _ in
            self.requests.withLock {
                $0.append(LoggedRequest(method: "GET", path: request.uri.path, query: [:],
                                        accept: request.headers[.accept]))
            }
            return "followed"
        }

        for path in ["/discovery/v2/events", "/discovery/v2/events.json"] {
            router.get(RouterPath(path)) { request, _ in
                try await self.serve(request, key: "apikey") { query in
                    try self.fixtures.ticketmasterSearch(
                        city: query["city"], keyword: query["keyword"], page: Int(query["page"] ?? "") ?? 0,
                        size: Int(query["size"] ?? "") ?? 20)
                }
            }
        }
        router.get("/discovery/v2/events/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            return try await self.serve(request, key: "apikey") { _ in
                try self.fixtures.ticketmasterEvent(id: id.hasSuffix(".json") ? String(id.dropLast(5)) : id)
            }
        }
        router.get("/search/collection") { request, _ in
            try await self.serve(request) { query in
                try self.fixtures.rijksmuseum.search(query, rawQuery: request.uri.query)
            }
        }
        router.get("/id/:number") { request, context in
            let number = context.parameters.get("number") ?? ""
            return try await self.resolve(request, number: number)
        }
        router.get("/:number") { request, context in
            let number = context.parameters.get("number") ?? ""
            guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber) else {
                return Self.response(404, Data(#"{"error":"not found"}"#.utf8))
            }
            return try await self.serve(request) { _ in try self.fixtures.rijksmuseum.record(number: number) }
        }
        addBookAndPhoneRoutes(to: router)
    }

    /// NYT Books, Google Books, the mobile phones and the flash cards. The router ignores a trailing slash, so
    /// `/api/mobiles/` and `/api/mobiles` (both in use by clients) reach the same route.
    private func addBookAndPhoneRoutes<Context: RequestContext>(to router: Router<Context>) {
        let nyt = fixtures.nytBooks
        router.get("/svc/books/v3/lists/names.json") { request, _ in
            try await self.serve(request, key: "api-key") { _ in nyt.listNames() }
        }
        for (path, full) in [("/svc/books/v3/lists/full-overview.json", true),
                             ("/svc/books/v3/lists/overview.json", false)] {
            router.get(RouterPath(path)) { request, _ in
                try await self.serve(request, key: "api-key") { _ in nyt.overview(full: full) }
            }
        }
        router.get("/svc/books/v3/lists/current/{list}.json") { request, context in
            let list = context.parameters.get("list") ?? ""
            return try await self.serve(request, key: "api-key") { _ in nyt.currentList(list) }
        }
        router.get("/svc/books/v3/lists.json") { request, _ in
            try await self.serve(request, key: "api-key") { query in nyt.lists(query["list"]) }
        }
        router.get("/books/v1/volumes") { request, _ in
            try await self.serve(request, key: "key", keyRequired: false) { query in
                try self.fixtures.googleBooks.volumes(query)
            }
        }
        let mobiles = fixtures.mobiles
        router.get("/api/mobiles") { request, _ in try await self.serve(request) { _ in mobiles.mobiles() } }
        router.get("/api/mobiles/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            return try await self.serve(request) { _ in mobiles.mobile(id) }
        }
        router.get("/api/mobiles/:id/images") { request, context in
            let id = context.parameters.get("id") ?? ""
            return try await self.serve(request) { _ in mobiles.images(id) }
        }
        router.get("/api/v2/cards") { request, _ in
            try await self.serve(request) { _ in self.fixtures.flashCards.cards() }
        }
    }

    /// The museum's resolver: logs the request, applies a fault if one matches, then sends a request for JSON-LD to
    /// record `number` on the data host (on the port it was asked on), any other to the website.
    private func resolve(_ request: Request, number: String) async throws -> Response {
        log(request, query: [:], key: nil)
        if let faulty = try await Self.apply(takeFault(for: request.uri.path)) { return faulty }
        guard Self.acceptsLinkedData(request) else { return Self.redirect(to: "website") }
        let authority = request.head.authority ?? "127.0.0.1"
        var location = "http://\(authority)/\(number)"
        if let museumDataHost {
            let port = authority.split(separator: ":").last.flatMap { Int($0) }
            location = "http://\(museumDataHost)\(port.map { ":\($0)" } ?? "")/\(number)"
        }
        var response = Self.response(303, Data())
        response.headers[.location] = location
        return response
    }

    /// Logs the request, applies a fault if one matches, checks the key (for an upstream that has one, named `key`,
    /// unless `keyRequired` is false: redacted in the log but not demanded), then answers with `answer`.
    private func serve(_ request: Request, key: String? = nil, keyRequired: Bool = true,
                       answer: ([String: String]) throws -> (Int, Data)) async throws -> Response
    {
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
        log(request, query: query, key: key)

        let fault = takeFault(for: request.uri.path)
        if let faulty = try await Self.apply(fault) { return faulty }
        if let key, keyRequired, query[key]?.isEmpty ?? true {
            return Self.response(401, Data(#"{"fault":{"faultstring":"Invalid ApiKey","detail":{"errorcode":"oauth.v2.InvalidApiKey"}}}"#.utf8))
        }
        let (status, body) = try answer(query)
        switch fault?.body {
        case .truncated: return Self.truncated(status, body)
        case .trickle: return Self.trickled(status, body)
        case .malformed, .html, .none:
            let isRecord = request.uri.path.dropFirst().allSatisfy(\.isNumber) && status == 200
            return Self.response(status, body, contentType: isRecord ? Self.linkedDataType : Self.jsonType)
        }
    }

    /// Appends the request to the log, the value of the upstream's key parameter redacted.
    private func log(_ request: Request, query: [String: String], key: String?) {
        var logged = query
        if let key, logged[key] != nil { logged[key] = "<redacted>" }
        let entry = LoggedRequest(method: request.method.rawValue, path: request.uri.path, query: logged,
                                  accept: request.headers[.accept])
        requests.withLock { $0.append(entry) }
    }

    /// The answer a fault replaces the real one with, after its delay; nil when the real answer goes out (perhaps
    /// truncated or trickled).
    private static func apply(_ fault: Fault?) async throws -> Response? {
        if let delay = fault?.delayMs { try await Task.sleep(for: .milliseconds(delay)) }
        if let status = fault?.status {
            var response = failure(status: status)
            if let seconds = fault?.retryAfter { response.headers[.retryAfter] = String(seconds) }
            return response
        }
        switch fault?.body {
        case .malformed: return response(200, Data(#"{"_embedded": {"events": [ {"id": "#.utf8))
        case .html: return response(200, Data("<html><body>Service temporarily unavailable</body></html>".utf8),
                                    contentType: "text/html")
        case .truncated, .trickle, .none: return nil
        }
    }

    /// Whether `Accept` names JSON-LD, the only way the museum's records service answers with data.
    private static func acceptsLinkedData(_ request: Request) -> Bool {
        request.headers[.accept]?.lowercased().contains("application/ld+json") ?? false
    }

    private func takeFault(for path: String) -> Fault? {
        faults.withLock { faults in
            guard let index = faults.firstIndex(where: { path.hasPrefix($0.pathPrefix ?? "") }) else { return nil }
            let fault = faults[index]
            if let times = fault.times {
                if times <= 1 { faults.remove(at: index) } else { faults[index].times = times - 1 }
            }
            return fault
        }
    }

    static func failure(status: Int) -> Response {
        let body = status == 429
            ? #"{"fault":{"faultstring":"Rate limit quota violation. Quota limit  exceeded.","detail":{"errorcode":"policies.ratelimit.QuotaViolation"}}}"#
            : #"{"error":"replayed upstream failure"}"#
        if (300..<400).contains(status) { return redirect(to: "metadata", status: status, body: Data(body.utf8)) }
        return response(status, Data(body.utf8))
    }

    /// A redirect somewhere a proxy must never go: a client that follows it is caught by the log.
    static func redirect(to target: String, status: Int = 303, body: Data = Data()) -> Response {
        var response = response(status, body)
        response.headers[.location] = "/__replay/redirected?to=\(target)"
        return response
    }

    static let jsonType = "application/json;charset=utf-8"
    static let linkedDataType = "application/ld+json;charset=utf-8"

    static func response(_ status: Int, _ body: Data, contentType: String = jsonType) -> Response {
        Response(status: .init(code: status), headers: [.contentType: contentType],
                 body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// Declares the full length, sends half, then fails the stream so the connection closes mid-body.
    static func truncated(_ status: Int, _ body: Data) -> Response {
        let half = ByteBuffer(bytes: body.prefix(body.count / 2))
        return Response(
            status: .init(code: status),
            headers: [.contentType: "application/json;charset=utf-8", .contentLength: String(body.count)],
            body: ResponseBody { writer in
                try await writer.write(half)
                throw CancellationError()
            }
        )
    }

    static func trickled(_ status: Int, _ body: Data) -> Response {
        Response(
            status: .init(code: status),
            headers: [.contentType: "application/json;charset=utf-8", .contentLength: String(body.count)],
            body: ResponseBody { writer in
                var offset = 0
                while offset < body.count {
                    try await writer.write(ByteBuffer(bytes: body[offset..<min(offset + 64, body.count)]))
                    offset += 64
                    try await Task.sleep(for: .milliseconds(100))
                }
                try await writer.finish(nil)
            }
        )
    }

    static func json(_ value: some Encodable) throws -> Response {
        response(200, try JSONEncoder().encode(value))
    }
}
