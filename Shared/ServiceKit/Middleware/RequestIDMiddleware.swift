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

    static func newID() -> String { UUID.random().uuidString.lowercased() }
}

/// W3C Trace Context `traceparent` (`00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`).
public enum Traceparent {
    static func validated(_ header: String) -> String? {
        let parts = header.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "00", parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy(\.isLowercaseHex) }),
              parts[1] != Substring(String(repeating: "0", count: 32)),
              parts[2] != Substring(String(repeating: "0", count: 16))
        else { return nil }
        return header
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func start() -> String {
        // Three 64-bit draws (a system call each): drawing the 24 bytes one at a time cost a system call per byte, a
        // tenth of a cheap request's CPU.
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64, generator.next() as UInt64)
        return "00-" + hex(words.0) + hex(words.1) + "-" + hex(words.2) + "-01"
    }

    /// The `traceparent` of a call this service makes while serving a request with `traceparent`: the same trace id
    /// and flags, a new parent id (this call's span), so the peer's work joins the caller's trace.
    public static func child(of traceparent: String) -> String {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return start() }
        var generator = SystemRandomNumberGenerator()
        return "\(parts[0])-\(parts[1])-" + hex(generator.next()) + "-\(parts[3])"
    }

    /// `value` as 16 lowercase hex digits; an all-zero id is invalid, so a zero draw (2⁻⁶⁴) becomes 1.
    static func hex(_ value: UInt64) -> String {
        let value = value == 0 ? 1 : value
        return String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 {
                buffer[index] = hexDigits[Int((value >> UInt64(60 - 4 * index)) & 0xF)]
            }
            return 16
        }
    }
}

extension UInt8 {
    var isASCIIAlphanumeric: Bool { (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self) }
    var isLowercaseHex: Bool { (48...57).contains(self) || (97...102).contains(self) }
}
