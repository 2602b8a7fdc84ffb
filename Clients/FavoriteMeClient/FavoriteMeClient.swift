import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The FavoriteMe Cloud API for an app: typed async calls for every public route, a session that refreshes itself,
/// problems as values (``FavoriteMeError``), and every write through one ordered queue per user that survives being
/// offline, being killed and users switching (``PendingWrite``).
///
///     let client = FavoriteMeClient(baseURL: URL(string: "https://api.example.com")!,
///                                   tokens: KeychainTokenStore(), local: FileLocalStore(directory: stateURL))
///     if let user = try await client.restoreSession() { open(user.experience) } else { showSignIn() }
///
/// Built on URLSession and `Contracts` only, so it runs in an iOS 15 or macOS 14 app and on Linux.
public final class FavoriteMeClient: Sendable {
    public let baseURL: URL
    /// Sent with sign-in and sign-up, listed in the user's sessions ("iPhone").
    public let deviceName: String?
    public let retryPolicy: RetryPolicy
    let urlSession: URLSession
    let sessions: SessionKeeper
    let outbox: Outbox
    let timeout: TimeInterval
    let observer: (@Sendable (_ method: String, _ path: String) -> Void)?
    private let networkWatch = NetworkWatch()

    /// - Parameters:
    ///   - tokens: where the session is kept between launches.
    ///   - local: where each user's queue of writes and synced favorites are kept.
    ///   - retryPolicy: how a write that failed on the way is retried before it is parked.
    ///   - observer: told of every request the client sends (method and path), e.g. for logs.
    public init(baseURL: URL, deviceName: String? = nil, tokens: any TokenStore = MemoryTokenStore(),
                local: any LocalStore = MemoryLocalStore(), retryPolicy: RetryPolicy = RetryPolicy(),
                urlSession: URLSession = .shared, timeout: TimeInterval = 15,
                observer: (@Sendable (String, String) -> Void)? = nil) {
        self.baseURL = baseURL
        self.deviceName = deviceName
        self.retryPolicy = retryPolicy
        self.urlSession = urlSession
        let outbox = Outbox(store: local, events: Broadcast())
        self.outbox = outbox
        sessions = SessionKeeper(store: tokens, events: Broadcast()) { user in await outbox.forgetCopy(of: user.id) }
        self.timeout = timeout
        self.observer = observer
        // When the network returns, the queue goes out (Apple platforms; elsewhere call sendPendingWrites()).
        networkWatch.start { [weak self] in
            guard let self else { return }
            Task { await self.sendPendingWrites() }
        }
    }

    deinit { networkWatch.stop() }

    /// The session's events, starting with where it stands now (``AuthEvent/signedIn(_:)`` or
    /// ``AuthEvent/signedOut``): what an app's root screen follows.
    public func authEvents() async -> AsyncStream<AuthEvent> {
        await sessions.events.subscribe(startingWith: await sessions.state())
    }

    /// What happens to the device's favorites and queue: read them again on ``LocalEvent/changed``, tell the user of
    /// a refused or parked write, report a document set aside.
    public func localEvents() async -> AsyncStream<LocalEvent> {
        await outbox.events.subscribe()
    }

    /// An answer without a body (204).
    struct NoContent: Decodable {}

    /// A request to the API. `authenticated` requests carry the session's access token, refreshed when it has expired
    /// and once more when the server says it has. `path` is percent-encoded (see ``segment(_:)``).
    struct Call: Sendable {
        var method: String
        var path: String
        var query: [URLQueryItem] = []
        var body: Data?
        var headers: [String: String] = [:]
        var authenticated = true
    }

    func send<Answer: Decodable>(_ call: Call, as type: Answer.Type = Answer.self, for user: UUID? = nil)
        async throws(FavoriteMeError) -> Answer
    {
        try decode(try await sendForData(call, for: user), as: type)
    }

    /// The answer's status and body; a problem is thrown as ``FavoriteMeError/refused(_:)``.
    /// `user`: the user the call is made for (a queued write's owner); sent only with that user's session.
    func sendForData(_ call: Call, for user: UUID? = nil) async throws(FavoriteMeError) -> (status: Int, body: Data) {
        guard call.authenticated else { return try await exchange(call, token: nil) }
        let refresh = refresher
        let credential = try await sessions.credential(for: user, refresh: refresh)
        do {
            return try await exchange(call, token: credential.token)
        } catch .refused(let problem) where (problem.status == 401 && [.tokenExpired, .invalidToken].contains(problem.type))
            || problem.type == .emailUnverified
        {
            // Expired (or revoked) on the server's clock, or issued before the email was verified (in a browser, say):
            // one refresh, shared with any concurrent call, then again.
            let fresh = try await sessions.refreshed(after: credential, refresh: refresh)
            return try await exchange(call, token: fresh.token)
        }
    }

    /// The refresh call itself: unauthenticated, with the refresh token in the body.
    var refresher: @Sendable (String) async throws(FavoriteMeError) -> AuthSession {
        { [self] refreshToken async throws(FavoriteMeError) in
            let body = try encode(RefreshRequest(refreshToken: refreshToken))
            return try decode(try await exchange(Call(method: "POST", path: "/v1/auth/refresh", body: body,
                                                      authenticated: false), token: nil), as: AuthSession.self)
        }
    }

    /// One HTTP exchange: 2xx is the answer, a problem document is thrown as a refusal.
    private func exchange(_ call: Call, token: String?) async throws(FavoriteMeError) -> (status: Int, body: Data) {
        let request = try urlRequest(for: call, token: token, accept: "application/json")
        observer?(call.method, call.path)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            throw Self.failure(error)
        }
        guard let http = response as? HTTPURLResponse else { throw .transport("no HTTP answer") }
        let status = http.statusCode
        if (200..<300).contains(status) { return (status, data) }
        throw Self.refusal(status: status, body: data, retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
    }

    /// The request `call` becomes, with `token` and `accept`.
    func urlRequest(for call: Call, token: String?, accept: String) throws(FavoriteMeError) -> URLRequest {
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            throw .unexpectedAnswer(status: 0, detail: "no URL for \(call.path)")
        }
        components.percentEncodedPath = components.percentEncodedPath.trimmingSuffix("/") + call.path
        if !call.query.isEmpty { components.queryItems = call.query }
        guard let url = components.url else { throw .unexpectedAnswer(status: 0, detail: "no URL for \(call.path)") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = call.method
        request.setValue(accept, forHTTPHeaderField: "Accept")
        if let body = call.body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// A failure on the way, as the error it is: offline when the request cannot have left.
    static func failure(_ error: any Error) -> FavoriteMeError {
        if let error = error as? URLError, neverLeft.contains(error.code) {
            return .offline("\(error.code.rawValue) \(error.localizedDescription)")
        }
        return .transport((error as? URLError).map { "\($0.code.rawValue) \($0.localizedDescription)" } ?? "\(error)")
    }

    /// A non-2xx answer: its problem document as a refusal, or what else came.
    static func refusal(status: Int, body: Data, retryAfter: String?) -> FavoriteMeError {
        if let problem = try? JSONCoding.decoder.decode(ProblemDetails.self, from: body) {
            return .refused(APIProblem(problem, retryAfter: retryAfter.flatMap { Int($0) }))
        }
        return .unexpectedAnswer(status: status, detail: String(decoding: body.prefix(200), as: UTF8.self))
    }

    /// Failures where the request cannot have reached the server: no network, no route, nothing listening.
    private static let neverLeft: Set<URLError.Code> = [
        .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .dataNotAllowed,
        .internationalRoamingOff, .callIsActive,
    ]

    func decode<Answer: Decodable>(_ answer: (status: Int, body: Data), as type: Answer.Type) throws(FavoriteMeError)
        -> Answer
    {
        if Answer.self == NoContent.self, let none = NoContent() as? Answer { return none }
        do {
            return try JSONCoding.decoder.decode(type, from: answer.body)
        } catch {
            throw .unexpectedAnswer(status: answer.status, detail: "a body that is not \(type): \(error)")
        }
    }

    /// `text` as one path segment: every byte outside the unreserved characters percent-encoded, so an id can never
    /// add a segment (`../`) or a query.
    static func segment(_ text: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encoded = text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
        // "." and ".." are unreserved but mean "here" and "up" as whole segments.
        return encoded == "." || encoded == ".." ? encoded.replacingOccurrences(of: ".", with: "%2E") : encoded
    }

    func encode(_ value: some Encodable) throws(FavoriteMeError) -> Data {
        do { return try JSONCoding.encoder.encode(value) } catch { throw .unexpectedAnswer(status: 0, detail: "\(error)") }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
