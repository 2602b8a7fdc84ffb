import Foundation
import OTel
import ServiceLifecycle

/// Traces exported over OTLP/HTTP (protobuf) with swift-otel, when an endpoint is configured:
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` is appended) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is).
/// The specification's other `OTEL_*` variables apply too (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, …). With no
/// endpoint nothing is bootstrapped: the tracer stays the no-op one, no exporter runs, nothing is paid.
enum TraceExport {
    /// Bootstraps the process-wide tracer and returns the exporter to run, or nil without an endpoint. Once per
    /// process, and before any HTTP client is made (AsyncHTTPClient takes the tracer when its configuration is made).
    /// The exporter flushes what it holds when it shuts down, so it goes first in the service group (last to stop).
    static func bootstrap(serviceName: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> (any Service)?
    {
        guard isConfigured(environment) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.logs.enabled = false  // logs: JSON lines on stdout, carrying the trace and span ids
        configuration.metrics.enabled = false  // metrics: Prometheus at /metrics
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        return try OTel.bootstrap(configuration: configuration, environment: environment)
    }

    static func isConfigured(_ environment: [String: String]) -> Bool {
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].contains { environment[$0]?.isEmpty == false }
    }
}
