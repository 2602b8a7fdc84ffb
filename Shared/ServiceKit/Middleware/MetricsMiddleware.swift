import CoreMetrics
import Foundation
import Hummingbird

/// Counts requests and records their latency per method, route and status (Prometheus:
/// `http_requests_total`, `http_request_duration_seconds`). Routes are labelled by their pattern
/// (`/v1/favorites/{experience}/{itemId}`), never the raw path, so the number of series stays bounded.
public struct MetricsMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext

    let factory: any MetricsFactory

    public init(factory: any MetricsFactory) {
        self.factory = factory
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let dimensions = [
            ("method", request.method.rawValue),
            ("route", context.endpointPath ?? "unmatched"),
            ("status", String(response.status.code)),
        ]
        Counter(label: "http_requests_total", dimensions: dimensions, factory: factory).increment()
        let (seconds, attoseconds) = start.duration(to: .now).components
        CoreMetrics.Timer(label: "http_request_duration_seconds", dimensions: dimensions, factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        return response
    }
}
