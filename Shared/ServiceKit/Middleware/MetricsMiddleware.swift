import CoreMetrics
import Foundation
import Hummingbird
import Logging

/// Counts requests and records their latency per method, route and status (Prometheus:
/// `http_requests_total`, `http_request_duration_seconds`), and writes one access-log line per request (level
/// `info`, with the request id from the logger's metadata). Routes are labelled by their pattern
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
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        CoreMetrics.Timer(label: "http_request_duration_seconds", dimensions: dimensions, factory: factory)
            .recordNanoseconds(nanoseconds)
        // The path only, never the query string: queries may carry search terms a user typed.
        context.logger.info("request", metadata: [
            "method": "\(request.method.rawValue)", "path": "\(request.uri.path)",
            "status": "\(response.status.code)", "duration_ms": "\(Double(nanoseconds) / 1_000_000)",
        ])
        return response
    }
}
