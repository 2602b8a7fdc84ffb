import Foundation
import HTTPTypes
import Hummingbird
import Locking
import NIOCore

/// A stand-in for the Ticketmaster and Rijksmuseum APIs that answers from the recorded responses in
/// `../shared/fixtures`, over real HTTP, on the upstreams' own paths: only the base URL differs from the real thing.
/// The keyless local stack uses it, and so do the catalog tests, which also inject faults and read the request log.
///
/// Control endpoints (not upstream paths), for tests, the local stack and chaos runs:
/// - `GET /__replay/requests`, `DELETE /__replay/requests`: the request log (API keys redacted).
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
        /// How many requests it applies to; until cleared when absent.
        public var times: Int?

        public init(pathPrefix: String? = nil, delayMs: Int? = nil, status: Int? = nil, body: Body? = nil,
                    times: Int? = nil) {
            self.pathPrefix = pathPrefix
            self.delayMs = delayMs
            self.status = status
            self.body = body
            self.times = times
        }
    }

    /// A request as the log shows it: key values never appear.
    public struct LoggedRequest: Codable, Sendable, Equatable {
        public var method: String
        public var path: String
        public var query: [String: String]
    }

    let fixtures: FixtureCatalog
    private let faults = Locked<[Fault]>([])
    private let requests = Locked<[LoggedRequest]>([])

    public init(fixtures root: URL) throws {
        fixtures = try FixtureCatalog(root: root)
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
            self.requests.withLock { $0.append(LoggedRequest(method: "GET", path: request.uri.path, query: [:])) }
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
        router.get("/api/:culture/collection") { request, _ in
            try await self.serve(request, key: "key") { query in
                try self.fixtures.rijksmuseumSearch(query: query["q"], page: Int(query["p"] ?? "") ?? 0,
                                                    size: Int(query["ps"] ?? "") ?? 10)
            }
        }
        router.get("/api/:culture/collection/:number") { request, context in
            let number = context.parameters.get("number") ?? ""
            return try await self.serve(request, key: "key") { _ in try self.fixtures.rijksmuseumObject(number: number) }
        }
    }

    /// Logs the request, applies a fault if one matches, checks the key, then answers with `answer`.
    private func serve(_ request: Request, key: String, answer: ([String: String]) throws -> (Int, Data))
        async throws -> Response
    {
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
        var logged = query
        if logged[key] != nil { logged[key] = "<redacted>" }
        requests.withLock { $0.append(LoggedRequest(method: request.method.rawValue, path: request.uri.path,
                                                    query: logged)) }

        let fault = takeFault(for: request.uri.path)
        if let delay = fault?.delayMs { try await Task.sleep(for: .milliseconds(delay)) }
        if let status = fault?.status { return Self.failure(status: status) }
        switch fault?.body {
        case .malformed: return Self.response(200, Data(#"{"_embedded": {"events": [ {"id": "#.utf8))
        case .html: return Self.response(200, Data("<html><body>Service temporarily unavailable</body></html>".utf8),
                                         contentType: "text/html")
        case .truncated, .trickle, .none: break
        }
        guard let apiKey = query[key], !apiKey.isEmpty else {
            return Self.response(401, Data(#"{"fault":{"faultstring":"Invalid ApiKey","detail":{"errorcode":"oauth.v2.InvalidApiKey"}}}"#.utf8))
        }
        let (status, body) = try answer(query)
        if fault?.body == .truncated { return Self.truncated(status, body) }
        if fault?.body == .trickle { return Self.trickled(status, body) }
        return Self.response(status, body)
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
        var response = response(status, Data(body.utf8))
        // A redirect points somewhere a proxy must never go: a client that follows it is caught by the log.
        if (300..<400).contains(status) { response.headers[.location] = "/__replay/redirected?to=metadata" }
        return response
    }

    static func response(_ status: Int, _ body: Data, contentType: String = "application/json;charset=utf-8")
        -> Response
    {
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
