import AsyncHTTPClient
import ServiceLifecycle

/// The process's HTTP client for peers and upstreams, shut down after the HTTP server has drained.
public struct HTTPClientService: Service {
    public let client: HTTPClient

    public init(client: HTTPClient) {
        self.client = client
    }

    public func run() async throws {
        try? await gracefulShutdown()  // park until the service group shuts down
        try await client.shutdown()
    }
}
