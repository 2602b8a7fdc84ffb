import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// A GET to another service as the user who asked (their bearer token), with the request's id and, when given, in
/// its trace: how auth-service and favorites-service ask catalog-proxy about an item or a category.
public struct PeerRequest: Sendable {
    public let baseURL: String
    public let httpClient: HTTPClient

    public init(baseURL: String, httpClient: HTTPClient) {
        self.baseURL = baseURL
        self.httpClient = httpClient
    }

    /// The peer's status and body (at most 1 MiB); nil when it could not be reached or did not answer in 8 seconds
    /// (logged), which callers turn into their own "try again shortly".
    public func get(_ path: String, bearer: String, requestID: String, traceparent: String? = nil, logger: Logger)
        async -> (status: UInt, body: Data)?
    {
        var request = HTTPClientRequest(url: baseURL.trimmingSuffix("/") + path)
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        request.headers.add(name: "X-Request-ID", value: requestID)
        if let traceparent { request.headers.add(name: "traceparent", value: Traceparent.child(of: traceparent)) }
        request.headers.add(name: "Accept", value: "application/json")
        do {
            let response = try await httpClient.execute(request, timeout: .seconds(8))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (response.status.code, Data(body.readableBytesView))
        } catch {
            logger.warning("peer unreachable", metadata: ["peer": "\(baseURL)", "error": "\(type(of: error))"])
            return nil
        }
    }
}
