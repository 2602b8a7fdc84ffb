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
        let digest = SHA256.hash(data: self).prefix(16).map { String(format: "%02x", $0) }.joined()
        let etag = "\"\(digest)\""
        var headers = headers
        headers[.eTag] = etag
        if request.ifNoneMatch(etag) { return Response(status: .notModified, headers: headers) }
        return jsonResponse(headers: headers)
    }
}
