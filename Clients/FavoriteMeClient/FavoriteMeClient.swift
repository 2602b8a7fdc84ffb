import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The FavoriteMe Cloud API for an app: typed async calls for every public route, a session that refreshes itself,
/// problems as values (``FavoriteMeError``), and writes that survive being offline (``Outbox``).
///
///     let client = FavoriteMeClient(baseURL: URL(string: "https://api.example.com")!,
///                                   tokens: KeychainTokenStore(), local: FileLocalStore(url: stateURL))
///     if let user = try await client.restoreSession() { open(user.experience) } else { showSignIn() }
///
/// Built on URLSession and `Contracts` only, so it runs in an iOS 17 or macOS 14 app and on Linux.
public final class FavoriteMeClient: Sendable {
    public let baseURL: URL
    /// Sent with sign-in and sign-up, listed in the user's sessions ("iPhone").
    public let deviceName: String?
    let urlSession: URLSession
    let sessions: SessionKeeper
    let outbox: Outbox
    let timeout: TimeInterval
    let observer: (@Sendable (_ method: String, _ path: String) -> Void)?

    /// - Parameters:
    ///   - tokens: where the session is kept between launches.
    ///   - local: where writes made offline wait, and the synced favorites are kept.
    ///   - observer: told of every request the client sends (method and path), e.g. for logs.
    public init(baseURL: URL, deviceName: String? = nil, tokens: any TokenStore = MemoryTokenStore(),
                local: any LocalStore = MemoryLocalStore(), urlSession: URLSession = .shared,
                timeout: TimeInterval = 15, observer: (@Sendable (String, String) -> Void)? = nil) {
        self.baseURL = baseURL
        self.deviceName = deviceName
        self.urlSession = urlSession
        sessions = SessionKeeper(store: tokens)
        outbox = Outbox(store: local)
        self.timeout = timeout
        self.observer = observer
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

    func send<Answer: Decodable>(_ call: Call, as type: Answer.Type = Answer.self) async throws(FavoriteMeError)
        -> Answer
    {
        try decode(try await sendForData(call), as: type)
    }

    /// The answer's status and body; a problem is thrown as ``FavoriteMeError/refused(_:)``.
    func sendForData(_ call: Call) async throws(FavoriteMeError) -> (status: Int, body: Data) {
        guard call.authenticated else { return try await exchange(call, token: nil) }
        let refresh = refresher
        let token = try await sessions.accessToken(refresh: refresh)
        do {
            return try await exchange(call, token: token)
        } catch .refused(let problem) where problem.status == 401
            && [.tokenExpired, .invalidToken].contains(problem.type)
        {
            // Expired (or revoked) on the server's clock: one refresh, shared with any concurrent call, then again.
            let fresh = try await sessions.refreshed(after: token, refresh: refresh)
            return try await exchange(call, token: fresh.accessToken)
        }
    }

    /// The refresh call itself: unauthenticated, with the refresh token in the body.
    private var refresher: @Sendable (String) async throws(FavoriteMeError) -> AuthSession {
        { [self] refreshToken async throws(FavoriteMeError) in
            let body = try encode(RefreshRequest(refreshToken: refreshToken))
            return try decode(try await exchange(Call(method: "POST", path: "/v1/auth/refresh", body: body,
                                                      authenticated: false), token: nil), as: AuthSession.self)
        }
    }

    /// One HTTP exchange: 2xx is the answer, a problem document is thrown as a refusal.
    private func exchange(_ call: Call, token: String?) async throws(FavoriteMeError) -> (status: Int, body: Data) {
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            throw .unexpectedAnswer(status: 0, detail: "no URL for \(call.path)")
        }
        components.percentEncodedPath = components.percentEncodedPath.trimmingSuffix("/") + call.path
        if !call.query.isEmpty { components.queryItems = call.query }
        guard let url = components.url else { throw .unexpectedAnswer(status: 0, detail: "no URL for \(call.path)") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = call.method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body = call.body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        observer?(call.method, call.path)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            throw .transport((error as? URLError).map { "\($0.code.rawValue) \($0.localizedDescription)" } ?? "\(error)")
        }
        guard let http = response as? HTTPURLResponse else { throw .transport("no HTTP answer") }
        let status = http.statusCode
        if (200..<300).contains(status) { return (status, data) }
        if let problem = try? JSONCoding.decoder.decode(ProblemDetails.self, from: data) {
            let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) }
            throw .refused(APIProblem(problem, retryAfter: retryAfter))
        }
        throw .unexpectedAnswer(status: status, detail: String(decoding: data.prefix(200), as: UTF8.self))
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

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
