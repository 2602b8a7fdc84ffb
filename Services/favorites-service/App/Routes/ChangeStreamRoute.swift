import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit
import ServiceLifecycle

/// `GET /v1/favorites/stream?experience=&after=`: the user's changes as Server-Sent Events (``WatchChanges``). The
/// position is the `Last-Event-ID` header a reconnecting client sends, else `after`, else now. Each event's id is
/// its version in the user's log.
struct ChangeStreamRoute: Sendable {
    let watchChanges: WatchChanges

    func register(on routes: RouterGroup<AuthenticatedContext>) {
        routes.get("stream", use: stream)
    }

    @Sendable func stream(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        // A token past its expiry (accepted within the clock leeway) would open a stream that ends at once: the client
        // is told to refresh instead.
        if let expiry = context.user.expiresAt, expiry <= Date() { throw AuthenticationMiddleware.refusal(.expired) }
        let query = request.uri.queryParameters
        let experience = try query["experience"].map { try FavoritesController.experience(String($0)).id }
        let stream = try await watchChanges.open(for: context.user, experience: experience,
                                                 after: try Self.position(of: request))
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store",
                                   Self.accelBuffering: "no"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // On SIGTERM the stream ends at once, so that the client moves to another replica and this one drains.
            try await withGracefulShutdownHandler {
                // The client closing its connection ends the stream at once, freeing its place: a write would notice
                // only at the next heartbeat, or the one after (the first write to a closed socket succeeds).
                try await request.body.consumeWithInboundCloseHandler { _ in
                    try await stream.run { message in
                        try await writer.write(ByteBuffer(string: message.serverSentEvent))
                    }
                } onInboundClosed: {
                    stream.end(.clientGone)
                }
            } onGracefulShutdown: {
                stream.end(.shuttingDown)
            }
            try await writer.finish(nil)
        })
    }

    /// Tells nginx not to buffer this response (the gateway also turns buffering off for the route).
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!

    /// `Last-Event-ID`, else `after`, else nil (from now): a version, 0 or more.
    static func position(of request: Request) throws -> Int64? {
        let (field, text): (String, String?) = if let header = request.headers[HTTPField.Name("Last-Event-ID")!] {
            ("Last-Event-ID", header)
        } else {
            ("after", request.uri.queryParameters["after"].map(String.init))
        }
        guard let text else { return nil }
        guard let position = Int64(text), position >= 0 else {
            throw ServiceProblem.validation([FieldError(field: field, message: "must be a version (0 or more)")])
        }
        return position
    }
}

extension WatchChanges.Message {
    /// The message as a Server-Sent Event: its id is the user's position after it, when it moves the position.
    var serverSentEvent: String {
        switch self {
        case .ready(let version):
            // `retry`: how long an EventSource waits before it reconnects.
            "retry: 2000\nid: \(version)\nevent: ready\ndata: {\"version\":\(version)}\n\n"
        case .change(let change):
            "id: \(change.change.version)\nevent: change\ndata: \((try? StoredJSON.change(change)) ?? "{}")\n\n"
        case .reload(let version):
            "id: \(version)\nevent: reload\ndata: {\"version\":\(version)}\n\n"
        case .profile(let change):
            // No id: a profile change is not a position in the user's log of favorites.
            "event: profile\ndata: \(Self.json(change))\n\n"
        case .heartbeat:
            ": heartbeat\n\n"
        case .end(let ending):
            "event: end\ndata: {\"reason\":\"\(ending.rawValue)\"}\n\n"
        }
    }

    /// One line of JSON (the encoder writes no line breaks, which would end an event's data).
    private static func json(_ value: some Encodable) -> String {
        String(decoding: (try? ServiceJSON.encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
