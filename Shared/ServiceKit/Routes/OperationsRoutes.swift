import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import Postgres
import Prometheus

/// `/health/live`, `/health/ready` and `/metrics`: what an orchestrator and a scraper need; and `/openapi.json`, the
/// published contract of the whole public API, which the gateway serves as `/v1/openapi.json`.
struct OperationsRoutes: Sendable {
    let pool: DatabasePool
    let peers: [PeerKind: String]
    let httpClient: HTTPClient
    let registry: PrometheusCollectorRegistry
    let readinessTimeout: Duration

    func register(on router: Router<AppRequestContext>, prefixes: [String]) throws {
        let bytes = try APIDocument.openAPIJSON()
        let document = ByteBuffer(bytes: bytes)
        // The same on every replica of every service built from the same document.
        let documentTag = ETag.of(bytes)
        router.get("/openapi.json") { request, _ in
            var headers: HTTPFields = [.eTag: documentTag, .cacheControl: "public, max-age=300"]
            if request.ifNoneMatch(documentTag) { return Response(status: .notModified, headers: headers) }
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: document))
        }
        for prefix in prefixes {
            router.get("\(prefix)/health/live") { _, _ in ReadinessReport(status: .ready, checks: [:]) }
            router.get("\(prefix)/health/ready") { _, _ in try await self.ready() }
        }
        router.get("/metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers,
                            body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    /// Ready when this replica can serve: its PostgreSQL answers within the readiness timeout. A peer that does not
    /// answer is reported (`degraded`, with its check) but is no reason to leave the load balancer: a peer's outage
    /// would otherwise take every replica of a healthy service out with it, and the routes that do not need the peer
    /// (most of them) with them.
    func ready() async throws -> ReadinessReport {
        let checks = await withTaskGroup(of: (String, String).self) { group in
            group.addTask { ("database", await pool.isReady(timeout: readinessTimeout) ? "ok" : "unreachable") }
            for (peer, baseURL) in peers {
                group.addTask { (peer.rawValue, await probe(baseURL + peer.probePath)) }
            }
            return await group.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
        }
        guard checks["database"] == "ok" else {
            throw ServiceProblem(.serviceUnavailable, .notReady, "Not ready: database \(checks["database"] ?? "unknown").",
                                 headers: [.retryAfter: "1"])
        }
        return ReadinessReport(status: checks.values.allSatisfy { $0 == "ok" } ? .ready : .degraded, checks: checks)
    }

    func probe(_ url: String) async -> String {
        do {
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            let response = try await httpClient.execute(request, timeout: .init(readinessTimeout))
            _ = try await response.body.collect(upTo: 64 * 1024)
            return response.status == .ok ? "ok" : "status \(response.status.code)"
        } catch {
            return "unreachable"
        }
    }
}

extension ReadinessReport: ResponseEncodable {}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
