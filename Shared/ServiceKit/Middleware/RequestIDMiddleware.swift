import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Postgres

extension HTTPField.Name {
    public static let requestID = HTTPField.Name("X-Request-ID")!
    public static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

/// Gives every request an id, puts it in every log line of the request,
/// and returns it in `X-Request-ID` on every response, errors included.
public struct RequestIDMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext

    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.requestID = request.headers[.requestID].flatMap(Self.acceptableID) ?? Self.newID()
        context.logger[metadataKey: "request_id"] = .string(context.requestID)
        context.logger[metadataKey: "hb.request.id"] = nil  // Hummingbird's internal id: one id per request in logs
        var response = try await next(request, context)
        response.headers[.requestID] = context.requestID
        return response
    }

    /// A caller's id is reused only when it is a short, plain token: it ends up in logs and JSON bodies.
    static func acceptableID(_ candidate: String) -> String? {
        guard (1...128).contains(candidate.utf8.count),
              candidate.utf8.allSatisfy({ $0.isASCIIAlphanumeric || "-_.:".utf8.contains($0) })
        else { return nil }
        return candidate
    }

    static func newID() -> String { UUID.random().lowercasedText }
}

extension UInt8 {
    var isASCIIAlphanumeric: Bool { (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self) }
}
