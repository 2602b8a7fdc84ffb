import Contracts
@testable import FavoriteMeClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request as the stub server saw it.
struct StubRequest: Sendable {
    var method: String
    var path: String
    var query: [String: String]
    var headers: [String: String]
    var body: Data?

    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// What the stub server does with a request.
enum StubAnswer: Sendable {
    /// An HTTP answer.
    case answer(status: Int, body: Data, headers: [String: String])
    /// No answer: the exchange fails with this error (no network, timed out, connection lost).
    case fail(URLError.Code)
    /// No answer until the client gives up (its task cancelled).
    case hang
    /// A Server-Sent Events answer: these event blocks, then the connection stays open until the client leaves
    /// (`open`), or closes.
    case events([String], open: Bool)

    static func json(_ value: some Encodable, status: Int = 200) -> StubAnswer {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return .answer(status: status, body: (try? encoder.encode(value)) ?? Data(), headers: ["Content-Type": "application/json"])
    }

    static func problem(_ status: Int, _ type: ProblemType, _ detail: String = "refused", retryAfter: Int? = nil) -> StubAnswer {
        let problem = ProblemDetails(type: type, title: "Refused", status: status, detail: detail, requestId: "stub",
                                     errors: nil)
        var answer = json(problem, status: status)
        if case .answer(let status, let body, var headers) = answer {
            headers["Content-Type"] = "application/problem+json"
            if let retryAfter { headers["Retry-After"] = String(retryAfter) }
            answer = .answer(status: status, body: body, headers: headers)
        }
        return answer
    }

    static let noContent = StubAnswer.answer(status: 204, body: Data(), headers: [:])
    /// A café's Wi-Fi sign-in page instead of the API's answer.
    static let portal = StubAnswer.answer(status: 200, body: Data("<html>Sign in to the Wi-Fi</html>".utf8),
                                          headers: ["Content-Type": "text/html"])
}

/// A fake FavoriteMe server behind URLProtocol: no socket, no stack. Each instance has a host of its own, so tests
/// running at once never share one; ``session`` is the URLSession to give the client (its configuration routes every
/// request here, the live changes stream's included).
final class StubServer: @unchecked Sendable {
    // @unchecked: `handler` and `seen` are only touched under `lock`.
    private let lock = NSLock()
    private var handler: @Sendable (StubRequest) -> StubAnswer
    private var seen: [StubRequest] = []
    let host = "stub-\(UUID().uuidString.lowercased()).test"
    let session: URLSession
    var baseURL: URL { URL(string: "http://\(host)")! }

    private static let servers = NSLock()
    nonisolated(unsafe) private static var byHost: [String: StubServer] = [:]

    init(_ handler: @escaping @Sendable (StubRequest) -> StubAnswer) {
        self.handler = handler
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StubProtocol.self]
        session = URLSession(configuration: configuration)
        Self.servers.withLock { Self.byHost[host] = self }
    }

    deinit { Self.servers.withLock { Self.byHost[host] = nil } }

    static func server(for host: String) -> StubServer? { servers.withLock { byHost[host] } }

    /// From now on, requests are answered by `handler`.
    func answer(with handler: @escaping @Sendable (StubRequest) -> StubAnswer) { lock.withLock { self.handler = handler } }

    /// Every request so far, in order.
    var requests: [StubRequest] { lock.withLock { seen } }

    func requests(_ method: String, _ pathPrefix: String) -> [StubRequest] {
        requests.filter { $0.method == method && $0.path.hasPrefix(pathPrefix) }
    }

    func handle(_ request: StubRequest) -> StubAnswer {
        lock.withLock {
            seen.append(request)
            return handler
        }(request)
    }

    /// A client of this server (quick retries, no path monitor).
    func client(tokens: any TokenStore = MemoryTokenStore(), local: any LocalStore = MemoryLocalStore(),
                policy: RetryPolicy = RetryPolicy(firstDelay: 0.01, longestDelay: 0.05),
                backgroundActivity: any BackgroundActivity = ForegroundActivity(),
                log: (@Sendable (RequestRecord) -> Void)? = nil) -> FavoriteMeClient {
        FavoriteMeClient(baseURL: baseURL, deviceName: "stub phone", tokens: tokens, local: local, retryPolicy: policy,
                         urlSession: session, timeout: 5, backgroundActivity: backgroundActivity, watchesNetwork: false,
                         log: log)
    }
}

/// Routes a request to the ``StubServer`` of its host.
final class StubProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let server = url.host.flatMap(StubServer.server(for:)) else {
            client?.urlProtocol(self, didFailWithError: URLError(.cannotFindHost))
            return
        }
        var query: [String: String] = [:]
        for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] { query[item.name] = item.value }
        let seen = StubRequest(method: request.httpMethod ?? "GET", path: url.path, query: query,
                               headers: request.allHTTPHeaderFields ?? [:], body: request.httpBody ?? bodyFromStream())
        switch server.handle(seen) {
        case .answer(let status, let body, let headers):
            respond(status, headers: headers)
            client?.urlProtocol(self, didLoad: body)
            client?.urlProtocolDidFinishLoading(self)
        case .fail(let code):
            client?.urlProtocol(self, didFailWithError: URLError(code))
        case .hang:
            break
        case .events(let blocks, let open):
            respond(200, headers: ["Content-Type": "text/event-stream"])
            for block in blocks { client?.urlProtocol(self, didLoad: Data((block + "\n\n").utf8)) }
            if !open { client?.urlProtocolDidFinishLoading(self) }
        }
    }

    /// The client gave up (a `.hang` answer, or an open stream): what URLSession reports then.
    override func stopLoading() {
        client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
    }

    private func respond(_ status: Int, headers: [String: String]) {
        var headers = headers
        headers["X-Request-ID"] = request.value(forHTTPHeaderField: "X-Request-ID") ?? "stub"
        guard let url = request.url,
              let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return }
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
    }

    private func bodyFromStream() -> Data? {
        guard let stream = request.httpBodyStream else { return nil }
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            data.append(buffer, count: count)
        }
        return data
    }
}
