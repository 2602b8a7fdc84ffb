import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// favorites-service's three routes a heart with live changes on goes through, answered in the process (URLProtocol,
/// no socket): `PUT /v1/favorites/{experience}/{id}` (201, and a `change` event on every open stream),
/// `GET /v1/favorites/changes?since=`, and `GET /v1/favorites/stream` (`ready`, then the changes as they come). So the
/// figure is what the device does for a heart and its echo (encoding, saving, parsing, applying), without a network's
/// or a server's time.
final class StandInServer: @unchecked Sendable {
    // @unchecked: the open streams are URLProtocol instances, which cannot be Sendable; they and the feed are only
    // touched under `lock`.
    static let host = "stand-in.bench"
    private let lock = NSLock()
    private var state = State()
    private static let registry = NSLock()
    nonisolated(unsafe) private static var current: StandInServer?

    private struct State {
        var changes: [FavoriteChange] = []
        var streams: [ObjectIdentifier: StandInProtocol] = [:]
    }

    private func withState<Result>(_ body: (inout State) -> Result) -> Result { lock.withLock { body(&state) } }

    /// The user's feed starts with `favorites`, as many as the device's synced copy holds (its position).
    init(feedOf favorites: [Favorite]) {
        withState { state in
            for favorite in favorites {
                state.changes.append(FavoriteChange(version: Int64(state.changes.count + 1), kind: .added,
                                                    experience: favorite.item.experience, itemId: favorite.item.id,
                                                    at: favorite.favoritedAt, favorite: favorite))
            }
        }
        Self.registry.withLock { Self.current = self }
    }

    /// A session whose requests all come here.
    var session: URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StandInProtocol.self]
        return URLSession(configuration: configuration)
    }

    static var running: StandInServer? { registry.withLock { current } }

    fileprivate func answer(_ request: URLRequest, from connection: StandInProtocol) -> (Int, Data)? {
        guard let url = request.url else { return (400, Data()) }
        let segments = url.path.split(separator: "/").map(String.init)
        switch (request.httpMethod ?? "GET", segments.count) {
        case ("GET", 3) where segments[2] == "stream":
            withState { $0.streams[ObjectIdentifier(connection)] = connection }
            return nil  // answered by `open`, then by events
        case ("GET", 3) where segments[2] == "changes":
            let since = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "since" }?.value.flatMap(Int.init) ?? 0
            let page = withState { FavoriteChanges(changes: Array($0.changes.dropFirst(since)),
                                                        version: Int64($0.changes.count), hasMore: false) }
            return (200, Self.encode(page))
        case ("PUT", 4):
            let item = CatalogItem(id: segments[3], experience: ExperienceID(rawValue: segments[2]),
                                   title: "A painting of some length, \(segments[3])", subtitle: "A painter, 1642",
                                   imageURL: "https://lh3.googleusercontent.com/\(segments[3])=s400")
            let (favorite, version, streams) = withState { state in
                let favorite = Favorite(item: item, favoritedAt: Date(), version: Int64(state.changes.count + 1))
                state.changes.append(FavoriteChange(version: favorite.version, kind: .added, experience: item.experience,
                                                    itemId: item.id, at: favorite.favoritedAt, favorite: favorite))
                return (favorite, state.changes.count, Array(state.streams.values))
            }
            for stream in streams { stream.send("id: \(version)\nevent: change\ndata: {\"version\":\(version)}\n\n") }
            return (201, Self.encode(favorite))
        default:
            return (404, Data())
        }
    }

    fileprivate func closed(_ connection: StandInProtocol) {
        withState { $0.streams[ObjectIdentifier(connection)] = nil }
    }

    private static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return (try? encoder.encode(value)) ?? Data()
    }
}

/// One request to the stand-in.
final class StandInProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { request.url?.host == StandInServer.host }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let server = StandInServer.running, let url = request.url else {
            client?.urlProtocol(self, didFailWithError: URLError(.cannotConnectToHost))
            return
        }
        // No answer: the stream, open until the client leaves.
        guard let (status, body) = server.answer(request, from: self) else {
            respond(200, url: url, type: "text/event-stream")
            send("event: ready\ndata: {}\n\n")
            return
        }
        respond(status, url: url, type: "application/json")
        client?.urlProtocol(self, didLoad: body)
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {
        StandInServer.running?.closed(self)
        client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
    }

    func send(_ text: String) {
        client?.urlProtocol(self, didLoad: Data(text.utf8))
    }

    private func respond(_ status: Int, url: URL, type: String) {
        guard let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1",
                                             headerFields: ["Content-Type": type])
        else { return }
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
    }
}
