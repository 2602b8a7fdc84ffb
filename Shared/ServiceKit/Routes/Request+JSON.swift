import Contracts
import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Reads a JSON body as `Value`, turning every way it can be wrong into a precise problem:
    /// not JSON by content type → 415; too large → 413; not parseable → 400 `malformed-request`;
    /// missing, null or mistyped fields → 400 `validation-failed` listing them. With `allowedKeys`, a top-level
    /// field outside that set is refused too (for bodies where an ignored field would look like a success).
    public func decodeJSON<Value: Decodable>(
        as type: Value.Type, context: some RequestContext, allowedKeys: Set<String>? = nil
    ) async throws -> Value {
        let contentType = headers[.contentType]?.lowercased() ?? ""
        let mediaType = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard mediaType == "application/json" || mediaType.hasSuffix("+json") else {
            throw ServiceProblem(.unsupportedMediaType, .unsupportedMediaType,
                                 "Send the body as application/json.")
        }
        let buffer = try await body.collect(upTo: context.maxUploadSize)
        guard buffer.readableBytes > 0 else {
            throw ServiceProblem(.badRequest, .malformedRequest, "A JSON body is required.")
        }
        // JSON is UTF-8 (RFC 8259); the decoder checks only the strings it decodes, so invalid bytes in a field
        // the type ignores would otherwise pass.
        guard String(validating: buffer.readableBytesView, as: UTF8.self) != nil else {
            throw ServiceProblem(.badRequest, .malformedRequest, "The body is not valid UTF-8.")
        }
        let data = Data(buffer.readableBytesView)
        do {
            if let allowedKeys {
                let keys = try ServiceJSON.decoder.decode([String: IgnoredValue].self, from: data).keys
                let unknown = keys.filter { !allowedKeys.contains($0) }.sorted()
                if !unknown.isEmpty {
                    throw ServiceProblem.validation(unknown.map { FieldError(field: $0, message: "cannot be set here") })
                }
            }
            return try ServiceJSON.decoder.decode(Value.self, from: data)
        } catch let error as DecodingError {
            throw Self.problem(for: error)
        }
    }

    static func problem(for error: DecodingError) -> ServiceProblem {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return .validation([FieldError(field: path(context.codingPath + [key]), message: "is required")])
        case .valueNotFound(_, let context):
            return .validation([FieldError(field: path(context.codingPath), message: "must not be null")])
        case .typeMismatch(let type, let context):
            return .validation([FieldError(field: path(context.codingPath),
                                           message: "must be \(Self.jsonName(of: type))")])
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return ServiceProblem(.badRequest, .malformedRequest, "The body is not valid JSON.")
        case .dataCorrupted(let context):
            return .validation([FieldError(field: path(context.codingPath), message: "has an invalid value")])
        @unknown default:
            return ServiceProblem(.badRequest, .malformedRequest, "The body could not be read.")
        }
    }

    /// Any JSON value, skipped: used to list an object's keys.
    struct IgnoredValue: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    /// Names a Swift type the way a JSON client thinks of it.
    static func jsonName(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        default: "of another type (\(type))"
        }
    }
}
