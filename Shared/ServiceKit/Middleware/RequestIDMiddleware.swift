import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension HTTPField.Name {
    public static let requestID = HTTPField.Name("X-Request-ID")!
    public static let traceparent = HTTPField.Name("traceparent")!
    public static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

/// Outermost middleware: gives every request an id and a trace context, puts the id in every log line of the request,
/// and returns it in `X-Request-ID` on every response, errors included.
public struct RequestIDMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext

    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.requestID = request.headers[.requestID].flatMap(Self.acceptableID) ?? Self.newID()
        context.traceparent = request.headers[.traceparent].flatMap(Traceparent.validated)
            ?? Traceparent.start()
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

    static func newID() -> String { UUID().uuidString.lowercased() }
}

/// W3C Trace Context `traceparent` (`00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`).
enum Traceparent {
    static func validated(_ header: String) -> String? {
        let parts = header.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "00", parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy(\.isLowercaseHex) }),
              parts[1] != Substring(String(repeating: "0", count: 32)),
              parts[2] != Substring(String(repeating: "0", count: 16))
        else { return nil }
        return header
    }

    static func start() -> String {
        "00-\(randomHex(bytes: 16))-\(randomHex(bytes: 8))-01"
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }.joined()
    }
}

extension UInt8 {
    var isASCIIAlphanumeric: Bool { (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self) }
    var isLowercaseHex: Bool { (48...57).contains(self) || (97...102).contains(self) }
}
