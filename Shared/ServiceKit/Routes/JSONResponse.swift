import Crypto
import Foundation
import Hummingbird
import NIOCore

extension Data {
    /// A 200 (or `status`) response carrying this JSON, encoded by ``ServiceJSON``.
    public func jsonResponse(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: self)))
    }

    /// 200 with this JSON and a strong `ETag` computed from it, or 304 with the same headers when the request's
    /// `If-None-Match` already names that tag. For responses whose body is the whole of their state: the tag changes
    /// exactly when the body does, on every replica alike.
    public func conditionalJSONResponse(to request: Request, headers: HTTPFields) -> Response {
        let etag = ETag.of(self)
        var headers = headers
        headers[.eTag] = etag
        if request.ifNoneMatch(etag) { return Response(status: .notModified, headers: headers) }
        return jsonResponse(headers: headers)
    }
}

extension Response {
    /// 204: done, nothing to say.
    public static var noContent: Response { Response(status: .noContent) }

    /// 304 with the headers the full answer would carry (its `ETag`, `Cache-Control`).
    public static func notModified(headers: HTTPFields) -> Response { Response(status: .notModified, headers: headers) }
}

/// Entity tags, made one way: a strong tag of a body's bytes (the same on every replica, for the same bytes), or of a
/// version of the state the body shows.
public enum ETag {
    /// `"<first 16 bytes of the body's SHA-256, hex>"`.
    public static func of(_ body: some DataProtocol) -> String {
        "\"" + SHA256.hash(data: Data(body)).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// `"<parts joined by ->"`: for a representation that follows a version (a user's stream) rather than its bytes.
    public static func version(_ parts: String...) -> String {
        "\"" + parts.joined(separator: "-") + "\""
    }
}
