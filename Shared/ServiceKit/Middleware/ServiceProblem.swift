import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error that becomes a problem+json response as it is: a status, a stable type, a human detail.
///
/// Handlers throw these for every client-facing failure; anything else that escapes a handler is mapped in one place
/// by ``ProblemMiddleware``.
public struct ServiceProblem: Error, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var type: ProblemType
    public var detail: String
    public var errors: [FieldError]?
    public var headers: HTTPFields

    public init(
        _ status: HTTPResponse.Status, _ type: ProblemType, _ detail: String,
        errors: [FieldError]? = nil, headers: HTTPFields = [:]
    ) {
        self.status = status
        self.type = type
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    public var description: String { "\(status.code) \(type): \(detail)" }

    /// 400 with the offending fields listed.
    public static func validation(_ errors: [FieldError]) -> ServiceProblem {
        let fields = errors.map(\.field).joined(separator: ", ")
        return ServiceProblem(.badRequest, .validationFailed, "Invalid fields: \(fields).", errors: errors)
    }

    /// The response, with the request id the client should quote.
    func response(requestID: String, path: String) -> Response {
        let body = ProblemDetails(
            type: type, title: status.reasonPhrase, status: status.code, detail: detail, instance: path,
            requestId: requestID, errors: errors
        )
        var headers = self.headers
        headers[.contentType] = ProblemDetails.mediaType
        headers[.cacheControl] = "no-store"
        let data = (try? ServiceJSON.encoder.encode(body)) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// The JSON settings of every body we write: stable key order (cacheable, diffable), ISO 8601 dates, no `\/`.
public enum ServiceJSON {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

/// An error of a service's own (a domain refusal, an upstream failure) that knows the problem a client gets for it.
/// Each service says so in one place, its `Routes/…Problems.swift`; ``ProblemMiddleware`` answers with it.
public protocol ProblemConvertible: Error {
    var problem: ServiceProblem { get }
}
