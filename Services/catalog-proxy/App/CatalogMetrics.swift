import CoreMetrics
import Foundation

/// What an operator asks of catalog-proxy, in its `/metrics`: how often answers come from the cache, how each upstream
/// answers and how fast, whether its breaker is open, how much of its daily quota is left, and how often a call was
/// refused before it left (our budget for the upstream, a user's share, the breaker).
struct CatalogMetrics: Sendable {
    let factory: any MetricsFactory

    /// `catalog_cache_lookups_total{experience, route, result}`: `result` is the response cache's answer (`hit`,
    /// `miss`, `revalidating`, `stale`), as the `X-Cache` header says it.
    func cacheLookup(experience: String, route: String, result: String) {
        Counter(label: "catalog_cache_lookups_total",
                dimensions: [("experience", experience), ("route", route), ("result", result)], factory: factory)
            .increment()
    }

    /// `catalog_coalesced_requests_total{experience, route}`: misses that waited for the fetch another request had
    /// started instead of starting their own; `catalog_partial_pages_total{experience}`: search pages served with
    /// items left out (they could not be fetched in time).
    func coalesced(experience: String, route: String) {
        Counter(label: "catalog_coalesced_requests_total", dimensions: [("experience", experience), ("route", route)],
                factory: factory).increment()
    }

    func partialPage(experience: String) {
        Counter(label: "catalog_partial_pages_total", dimensions: [("experience", experience)], factory: factory)
            .increment()
    }

    /// `catalog_upstream_requests_total{upstream, outcome}` and `catalog_upstream_request_duration_seconds{upstream}`:
    /// every attempt that left, by what came back (`2xx`, `404`, `429`, `4xx`, `5xx`, `timeout`, `error`).
    func upstreamAttempt(_ upstream: String, outcome: String, duration: Duration) {
        Counter(label: "catalog_upstream_requests_total", dimensions: [("upstream", upstream), ("outcome", outcome)],
                factory: factory).increment()
        let (seconds, attoseconds) = duration.components
        CoreMetrics.Timer(label: "catalog_upstream_request_duration_seconds", dimensions: [("upstream", upstream)],
                          factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// `catalog_upstream_refusals_total{upstream, reason}`: calls that never left (`rate-limited`, `user-share`,
    /// `quota`, `circuit-open`).
    func refused(_ upstream: String, reason: String) {
        Counter(label: "catalog_upstream_refusals_total", dimensions: [("upstream", upstream), ("reason", reason)],
                factory: factory).increment()
    }

    /// `catalog_upstream_quota_left_calls{upstream}`: the calls left of today's quota for all replicas together (to
    /// within the blocks other replicas reserved and have not spent), for upstreams with a daily quota.
    func quotaLeft(_ upstream: String, calls: Int) {
        Gauge(label: "catalog_upstream_quota_left_calls", dimensions: [("upstream", upstream)], factory: factory)
            .record(calls)
    }

    /// `catalog_upstream_breaker_open{upstream}`: 1 while this replica's breaker for the upstream refuses calls.
    func breaker(_ upstream: String, open: Bool) {
        Gauge(label: "catalog_upstream_breaker_open", dimensions: [("upstream", upstream)], factory: factory)
            .record(open ? 1 : 0)
    }
}
