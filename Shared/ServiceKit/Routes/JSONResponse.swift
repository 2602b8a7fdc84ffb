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
}
