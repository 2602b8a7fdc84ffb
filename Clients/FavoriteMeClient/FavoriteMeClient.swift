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
/// Calls throw ``FavoriteMeError``, or `CancellationError` when the task that made them was cancelled. Built on
/// URLSession and `Contracts` only, so it runs in an iOS 17 or macOS 14 app and on Linux.
public final class FavoriteMeClient: Sendable {
    public let baseURL: URL
    /// Sent with sign-in and sign-up, listed in the user's sessions ("iPhone").
    public let deviceName: String?
    public let retryPolicy: RetryPolicy
    /// Every request goes through this session, the live changes stream's included.
    public let urlSession: URLSession
    let sessions: SessionKeeper
    let outbox: Outbox
    let timeout: TimeInterval
    let requestLog: (@Sendable (RequestRecord) -> Void)?
    let backgroundActivity: any BackgroundActivity
    /// Ends the live changes streams' waits between reconnects when the network returns or the app comes back.
    let wakeup = Wakeup()
    private let networkWatch: NetworkWatch?

    /// - Parameters:
    ///   - tokens: where the session is kept between launches.
    ///   - local: where each user's queue of writes and synced favorites are kept.
    ///   - retryPolicy: how long to wait before a write that failed on the way, or the live changes stream, is tried
    ///     again.
    ///   - urlSession: the session every request is made with, the live changes stream's included (its
    ///     configuration and delegate apply; on Linux the stream uses a session of its configuration).
    ///   - timeout: the longest wait for an answer (the stream's silence is allowed three heartbeats, 45 s).
    ///   - backgroundActivity: how a refresh or a send of the queue asks for time to finish when the app leaves the
    ///     foreground; on iOS a background task.
    ///   - watchesNetwork: on Apple platforms, follow the system's path monitor and call ``networkDidReturn()`` when
    ///     the network returns. Off when the app does it itself.
    ///   - log: told of every request once it is over: method, path, status, request id, duration (never a token or
    ///     a body). For an app's logs or metrics.
    public init(baseURL: URL, deviceName: String? = nil, tokens: any TokenStore = MemoryTokenStore(),
                local: any LocalStore = MemoryLocalStore(), retryPolicy: RetryPolicy = RetryPolicy(),
                urlSession: URLSession = .shared, timeout: TimeInterval = 15,
                backgroundActivity: any BackgroundActivity = FavoriteMeClient.platformBackgroundActivity,
                watchesNetwork: Bool = true, log: (@Sendable (RequestRecord) -> Void)? = nil) {
        self.baseURL = baseURL
        self.deviceName = deviceName
        self.retryPolicy = retryPolicy
        self.urlSession = urlSession
        let outbox = Outbox(store: local, events: Broadcast())
        self.outbox = outbox
        sessions = SessionKeeper(store: tokens, events: Broadcast(), backgroundActivity: backgroundActivity) { user in
            await outbox.forgetCopy(of: user.id)
        }
        self.timeout = timeout
        self.requestLog = log
        self.backgroundActivity = backgroundActivity
        networkWatch = watchesNetwork ? NetworkWatch() : nil
        // When the network returns, what waited goes out (Apple platforms; elsewhere the app calls networkDidReturn).
        networkWatch?.start { [weak self] in
            guard let self else { return }
            Task { await self.networkDidReturn() }
        }
    }

    deinit { networkWatch?.stop() }

    /// The session's events, starting with where it stands now (``AuthEvent/signedIn(_:)`` or
    /// ``AuthEvent/signedOut``): what an app's root screen follows.
    public func authEvents() async -> AsyncStream<AuthEvent> {
        await sessions.events.subscribe(startingWith: await sessions.state())
    }

    /// What happens to the device's favorites and queue: read them again on ``LocalEvent/changed``, tell the user of
    /// a refused write, report a document set aside.
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
        async throws -> Answer
    {
        try decode(try await sendForData(call, for: user), as: type)
    }

    /// The answer's status and body; a problem is thrown as ``FavoriteMeError/refused(_:)``.
    /// `user`: the user the call is made for (a queued write's owner); sent only with that user's session.
    func sendForData(_ call: Call, for user: UUID? = nil) async throws -> (status: Int, body: Data) {
        guard call.authenticated else { return try await exchange(call, token: nil) }
        let refresh = refresher
        let credential = try await sessions.credential(for: user, refresh: refresh)
        do {
            return try await exchange(call, token: credential.token)
        } catch FavoriteMeError.refused(let problem) where Self.asksForRefresh(problem) {
            // Expired (or revoked) on the server's clock, or issued before the email was verified (in a browser, say):
            // one refresh, shared with any concurrent call, then again.
            let fresh = try await sessions.refreshed(after: credential, refresh: refresh)
            return try await exchange(call, token: fresh.token)
        }
    }

    /// A refusal that a refreshed access token may turn into an answer.
    static func asksForRefresh(_ problem: APIProblem) -> Bool {
        (problem.status == 401 && [.tokenExpired, .invalidToken].contains(problem.type))
            || problem.type == .emailUnverified
    }

    /// The refresh call itself: unauthenticated, the refresh token in the body and the refresh's key (the same for
    /// every attempt of one refresh, so a retry whose first answer was lost gets the same successor).
    var refresher: SessionKeeper.Refresh {
        { [self] refreshToken, key in
            let body = try encode(RefreshRequest(refreshToken: refreshToken))
            return try decode(try await exchange(Call(method: "POST", path: "/v1/auth/refresh", body: body,
                                                      headers: ["Idempotency-Key": key], authenticated: false),
                                                 token: nil), as: AuthSession.self)
        }
    }

    /// One HTTP exchange: 2xx is the answer, a problem document is thrown as a refusal.
    private func exchange(_ call: Call, token: String?) async throws -> (status: Int, body: Data) {
        try Task.checkCancellation()
        let requestID = UUID().uuidString.lowercased()
        let request = try urlRequest(for: call, token: token, accept: "application/json", requestID: requestID)
        let started = ContinuousClock.now
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            let failure = Self.failure(error)
            record(call, requestID: requestID, since: started, outcome: .failure(failure))
            throw failure
        }
        guard let http = response as? HTTPURLResponse else {
            record(call, requestID: requestID, since: started, outcome: .failure(FavoriteMeError.transport("no HTTP")))
            throw FavoriteMeError.transport("no HTTP answer")
        }
        record(call, requestID: requestID, since: started, outcome: .success(http))
        let status = http.statusCode
        if (200..<300).contains(status) { return (status, data) }
        throw Self.refusal(status: status, body: data, retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
    }

    /// The request `call` becomes, with `token`, `accept` and the request id it is sent with (the server keeps it).
    func urlRequest(for call: Call, token: String?, accept: String, requestID: String) throws -> URLRequest {
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            throw FavoriteMeError.unexpectedAnswer(status: 0, detail: "no URL for \(call.path)")
        }
        components.percentEncodedPath = components.percentEncodedPath.trimmingSuffix("/") + call.path
        if !call.query.isEmpty { components.queryItems = call.query }
        guard let url = components.url else {
            throw FavoriteMeError.unexpectedAnswer(status: 0, detail: "no URL for \(call.path)")
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = call.method
        request.setValue(accept, forHTTPHeaderField: "Accept")
        request.setValue(requestID, forHTTPHeaderField: "X-Request-ID")
        if let body = call.body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// Tells the app's log hook how a request went.
    func record(_ call: Call, requestID: String, since started: ContinuousClock.Instant,
                outcome: Result<HTTPURLResponse, any Error>) {
        guard let requestLog else { return }
        var record = RequestRecord(method: call.method, path: call.path, status: nil, requestId: requestID,
                                   duration: ContinuousClock.now - started, failure: nil)
        switch outcome {
        case .success(let response):
            record.status = response.statusCode
            record.requestId = response.value(forHTTPHeaderField: "X-Request-ID") ?? requestID
        case .failure(FavoriteMeError.refused(let problem)):  // the stream's refusal, before its events
            record.status = problem.status
            record.requestId = problem.requestId
        case .failure(FavoriteMeError.unexpectedAnswer(let status, _)) where status > 0:
            record.status = status
        case .failure(let error as FavoriteMeError):
            record.failure = error.description
        case .failure:
            record.failure = "cancelled"
        }
        requestLog(record)
    }

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

/// One request the client made, for an app's logs or metrics (the `log:` hook of ``FavoriteMeClient``). Never holds a
/// token, a body or a query (a search's text stays on the device).
public struct RequestRecord: Sendable, Hashable {
    public var method: String
    /// The path, without the query.
    public var path: String
    /// The answer's status; nil when none came (no network, timed out, cancelled).
    public var status: Int?
    /// The `X-Request-ID` the server filed it under (the client sends one with each request): what to quote to
    /// the server's operators.
    public var requestId: String
    /// From sending the request to the end of its answer (for the live changes stream, to its first byte).
    public var duration: Duration
    /// What went wrong on the way, when no answer came.
    public var failure: String?
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
