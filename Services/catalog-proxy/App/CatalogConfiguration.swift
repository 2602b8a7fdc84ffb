import Configuration
import Contracts
import Foundation
import ServiceKit

/// catalog-proxy's own settings, next to the kit's ``ServiceConfiguration``. Every key is in the README's table.
///
/// - `TICKETMASTER_URL` (default `https://app.ticketmaster.com`), `TICKETMASTER_API_KEY` (secret)
/// - `RIJKSMUSEUM_URL` (default `https://www.rijksmuseum.nl`), `RIJKSMUSEUM_API_KEY` (secret)
/// - `TICKETMASTER_RATE_PER_SECOND` (default 5), `TICKETMASTER_DAILY_QUOTA` (default 5000),
///   `RIJKSMUSEUM_RATE_PER_SECOND` (default 10)
/// - `UPSTREAM_TIMEOUT_MS` (default 3000), `UPSTREAM_ATTEMPTS` (default 2), `UPSTREAM_BREAKER_COOLDOWN_SECONDS`
///   (default 30)
/// - `CATALOG_CACHE_MB` (default 64), `CATALOG_SEARCH_TTL_SECONDS` (default 60), `CATALOG_DETAIL_TTL_SECONDS`
///   (default 600), `CATALOG_STALE_IF_ERROR_SECONDS` (default 86400)
/// - `CATALOG_USER_RATE_PER_SECOND` (default 5, bursts of 4×)
struct CatalogConfiguration: Sendable {
    /// Per source, by experience.
    var upstreams: [ExperienceID: UpstreamSettings]
    var cacheBytes: Int
    var searchPolicy: CachePolicy
    var detailPolicy: CachePolicy
    var userRate: Double

    init(reader: ConfigReader) throws {
        var settings = StrictSettings(reader: reader)
        let timeout = Duration.milliseconds(settings.int("upstream.timeoutMs", default: 3000, in: 100...60_000))
        let attempts = settings.int("upstream.attempts", default: 2, in: 1...5)
        let breakerCooldown = TimeInterval(settings.int("upstream.breakerCooldownSeconds", default: 30, in: 1...3600))
        func upstream(_ name: String, url: String, rate: Int, quota: Int?) -> UpstreamSettings {
            let rate = Double(settings.int("\(name).ratePerSecond", default: rate, in: 1...1000))
            return UpstreamSettings(
                baseURL: settings.baseURL("\(name).url", default: url),
                apiKey: settings.optionalString("\(name).apiKey", isSecret: true),
                requestsPerSecond: rate, burst: rate, dailyQuota: quota, attemptTimeout: timeout, attempts: attempts,
                breakerThreshold: 5, breakerCooldown: breakerCooldown, maximumBodyBytes: 4 << 20
            )
        }
        let ticketmasterQuota = settings.int("ticketmaster.dailyQuota", default: 5000, in: 1...10_000_000)
        upstreams = [
            .ticketmaster: upstream("ticketmaster", url: "https://app.ticketmaster.com", rate: 5, quota: ticketmasterQuota),
            .rijksmuseum: upstream("rijksmuseum", url: "https://www.rijksmuseum.nl", rate: 10, quota: nil),
        ]
        cacheBytes = settings.int("catalog.cacheMb", default: 64, in: 1...16_384) << 20
        let staleIfError = TimeInterval(settings.int("catalog.staleIfErrorSeconds", default: 86_400,
                                                     in: 0...(30 * 86_400)))
        let searchTTL = TimeInterval(settings.int("catalog.searchTtlSeconds", default: 60, in: 1...86_400))
        let detailTTL = TimeInterval(settings.int("catalog.detailTtlSeconds", default: 600, in: 1...86_400))
        // Revalidate in the background for as long again as the TTL: popular searches never wait on the upstream.
        searchPolicy = CachePolicy(ttl: searchTTL, staleWhileRevalidate: searchTTL, staleIfError: staleIfError)
        detailPolicy = CachePolicy(ttl: detailTTL, staleWhileRevalidate: detailTTL, staleIfError: staleIfError)
        userRate = Double(settings.int("catalog.userRatePerSecond", default: 5, in: 1...1_000_000))
        try settings.validate()
    }
}
