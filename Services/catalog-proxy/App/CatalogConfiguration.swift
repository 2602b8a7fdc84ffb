import Configuration
import Contracts
import Foundation
import ServiceKit

/// catalog-proxy's own settings, next to the kit's ``ServiceConfiguration``. Every key is in the README's table.
///
/// - `TICKETMASTER_URL` (default `https://app.ticketmaster.com`), `TICKETMASTER_API_KEY` (secret),
///   `TICKETMASTER_RATE_PER_SECOND` (default 5), `TICKETMASTER_DAILY_QUOTA` (default 5000)
/// - `RIJKSMUSEUM_SEARCH_URL` (default `https://data.rijksmuseum.nl`), `RIJKSMUSEUM_RECORDS_URL` (default
///   `https://data.rijksmuseum.nl`: the metadata host, asked directly; the resolver `https://id.rijksmuseum.nl` works
///   too, its redirects followed between the two), `RIJKSMUSEUM_RATE_PER_SECOND` (default 20, per host; no key)
/// - `UPSTREAM_TIMEOUT_MS` (default 3000), `UPSTREAM_ATTEMPTS` (default 2), `UPSTREAM_BREAKER_COOLDOWN_SECONDS`
///   (default 30)
/// - `CATALOG_CACHE_MB` (default 64), `CATALOG_SEARCH_TTL_SECONDS` (default 60), `CATALOG_DETAIL_TTL_SECONDS`
///   (default 600), `CATALOG_STALE_IF_ERROR_SECONDS` (default 86400), `CATALOG_NOT_FOUND_TTL_SECONDS` (default 600),
///   `CATALOG_RECORD_TTL_SECONDS` (default 604800), `CATALOG_PAGE_DEADLINE_MS` (default 4000)
/// - `NYT_BOOKS_URL` (default `https://api.nytimes.com`), `NYT_BOOKS_API_KEY` (secret), `NYT_BOOKS_DAILY_QUOTA`
///   (default 500), `NYT_BOOKS_CALLS_PER_MINUTE` (default 5; both counted for all replicas together)
/// - `GOOGLE_BOOKS_URL` (default `https://www.googleapis.com`), `GOOGLE_BOOKS_API_KEY` (secret, optional),
///   `GOOGLE_BOOKS_DAILY_QUOTA` (default 1000), `GOOGLE_BOOKS_RATE_PER_SECOND` (default 5)
/// - `MOBILES_URL` (no default: the loaded copy only), `FLASHCARDS_URL` (default the public mock API),
///   `CATALOG_DATASET_REFRESH_SECONDS` (default 3600)
/// - `CATALOG_USER_RATE_PER_SECOND` (default 5, bursts of 4×), `CATALOG_USER_UPSTREAM_SHARE_PERCENT` (default 20: what
///   one user may spend of each upstream budget, in each of its windows; see ``UserShare``)
/// - `CATALOG_BESTSELLERS_REFRESH_SECONDS` (default 3600; 0 turns the scheduled refresh off): how often the NYT's
///   overview of every current list is fetched again (``BestsellersRefresh``)
struct CatalogConfiguration: Sendable {
    /// Per upstream.
    var upstreams: [UpstreamName: UpstreamSettings]
    var cacheBytes: Int
    var searchPolicy: CachePolicy
    var detailPolicy: CachePolicy
    var notFoundTTL: TimeInterval
    var recordTTL: TimeInterval
    var pageDeadline: Duration
    var userRate: Double
    var datasetRefresh: TimeInterval
    /// How often the best sellers' overview is fetched again by the scheduled refresh; nil: no scheduled refresh
    /// (turned off, or no NYT key to call with).
    var bestsellersRefresh: TimeInterval?
    /// The NYT's calls in any minute, for all replicas (the refresh takes a share of them).
    var nytCallsPerMinute: Int

    init(reader: ConfigReader) throws {
        var settings = StrictSettings(reader: reader)
        let timeout = Duration.milliseconds(settings.int("upstream.timeoutMs", default: 3000, in: 100...60_000))
        let attempts = settings.int("upstream.attempts", default: 2, in: 1...5)
        let breakerCooldown = TimeInterval(settings.int("upstream.breakerCooldownSeconds", default: 30, in: 1...3600))
        let userShare = Double(settings.int("catalog.userUpstreamSharePercent", default: 20, in: 1...100)) / 100
        func upstream(url: String, default defaultURL: String, key: (setting: String, parameter: String)?, rate: Double,
                      burst: Double, quota: Int?, queueWait: TimeInterval, rolling: [RollingLimit] = [],
                      sharedPerUser: Bool = true) -> UpstreamSettings {
            var upstream = UpstreamSettings(
                baseURL: settings.baseURL(url, default: defaultURL),
                apiKey: key.flatMap { settings.optionalString($0.setting, isSecret: true) },
                keyParameter: key?.parameter ?? "key",
                requestsPerSecond: rate, burst: burst, dailyQuota: quota, attemptTimeout: timeout, attempts: attempts,
                breakerThreshold: 5, breakerCooldown: breakerCooldown, maximumBodyBytes: 4 << 20, queueWait: queueWait
            )
            upstream.rollingLimits = rolling
            if sharedPerUser {
                upstream.userShare = UserShare(fraction: userShare, rate: rate, burst: burst, rollingLimits: rolling,
                                               dailyQuota: quota)
            }
            return upstream
        }
        let ticketmasterRate = Double(settings.int("ticketmaster.ratePerSecond", default: 5, in: 1...1000))
        let ticketmasterQuota = settings.int("ticketmaster.dailyQuota", default: 5000, in: 1...10_000_000)
        // A cold page of artworks is a burst of record GETs: up to four per object (object, VisualItem,
        // DigitalObject, a maker named only by reference), 120 for a page of 30. The records' bucket holds a whole
        // page's burst (or three seconds' worth, if more), so the first user of a cold page never waits for tokens;
        // past it, calls wait a little rather than leave items out. The museum publishes no limit (this one is ours,
        // to be polite: one page's burst, then the rate) and one user's page needs the whole burst, so it is not
        // shared out per user: another user's calls wait for tokens rather than fail, and each user's requests are
        // bounded by CATALOG_USER_RATE_PER_SECOND.
        let rijksmuseumRate = Double(settings.int("rijksmuseum.ratePerSecond", default: 20, in: 1...1000))
        let pageOfRecords = Double(RijksmuseumSource.recordsPerObject * RijksmuseumSource.pageSize)
        var rijksmuseumSearch = upstream(
            url: "rijksmuseum.searchUrl", default: "https://data.rijksmuseum.nl", key: nil,
            rate: rijksmuseumRate, burst: rijksmuseumRate * 3, quota: nil, queueWait: 2, sharedPerUser: false)
        var rijksmuseumRecords = upstream(
            url: "rijksmuseum.recordsUrl", default: "https://data.rijksmuseum.nl", key: nil,
            rate: rijksmuseumRate, burst: max(rijksmuseumRate * 3, pageOfRecords), quota: nil, queueWait: 2,
            sharedPerUser: false)
        // The museum's resolver answers a record id with 303 to its metadata on the data host: between the museum's
        // two hosts, and only there, redirects are followed.
        let museumHosts = UpstreamRedirect(allowing: [rijksmuseumSearch.baseURL, rijksmuseumRecords.baseURL,
                                                      "https://id.rijksmuseum.nl", "https://data.rijksmuseum.nl"])
        rijksmuseumSearch.redirect = museumHosts
        rijksmuseumRecords.redirect = museumHosts
        let nytDailyQuota = settings.int("nytBooks.dailyQuota", default: 500, in: 1...1_000_000)
        let nytPerMinute = settings.int("nytBooks.callsPerMinute", default: 5, in: 1...10_000)
        upstreams = [
            .ticketmaster: upstream(
                url: "ticketmaster.url", default: "https://app.ticketmaster.com",
                key: ("ticketmaster.apiKey", "apikey"), rate: ticketmasterRate, burst: ticketmasterRate,
                quota: ticketmasterQuota, queueWait: 0),
            .rijksmuseumSearch: rijksmuseumSearch,
            .rijksmuseumRecords: rijksmuseumRecords,
            // 5 calls in any 60 seconds and 500 in any day (the NYT's own limits), counted for every replica in
            // PostgreSQL; lists are kept for hours, so only new lists cost calls.
            .nytBooks: upstream(
                url: "nytBooks.url", default: "https://api.nytimes.com", key: ("nytBooks.apiKey", "api-key"),
                rate: 1, burst: 5, quota: nil, queueWait: 0,
                rolling: [RollingLimit(calls: nytPerMinute, window: 60), RollingLimit(calls: nytDailyQuota, window: 86_400)]),
            .googleBooks: upstream(
                url: "googleBooks.url", default: "https://www.googleapis.com", key: ("googleBooks.apiKey", "key"),
                rate: Double(settings.int("googleBooks.ratePerSecond", default: 5, in: 1...1000)), burst: 5,
                quota: settings.int("googleBooks.dailyQuota", default: 1000, in: 1...10_000_000), queueWait: 0),
            .flashcards: upstream(
                url: "flashcards.url", default: "https://5daf8b36f2946f001481d81c.mockapi.io", key: nil,
                rate: 1, burst: 2, quota: nil, queueWait: 0),
        ]
        // The brief's host is gone: without a configured copy, the phones are the loaded dataset only.
        if settings.optionalString("mobiles.url") != nil {
            upstreams[.mobiles] = upstream(url: "mobiles.url", default: "", key: nil, rate: 5, burst: 10, quota: nil,
                                           queueWait: 2)
        }
        cacheBytes = settings.int("catalog.cacheMb", default: 64, in: 1...16_384) << 20
        let staleIfError = TimeInterval(settings.int("catalog.staleIfErrorSeconds", default: 86_400,
                                                     in: 0...(30 * 86_400)))
        let searchTTL = TimeInterval(settings.int("catalog.searchTtlSeconds", default: 60, in: 1...86_400))
        let detailTTL = TimeInterval(settings.int("catalog.detailTtlSeconds", default: 600, in: 1...86_400))
        // Revalidate in the background for as long again as the TTL: popular searches never wait on the upstream.
        searchPolicy = CachePolicy(ttl: searchTTL, staleWhileRevalidate: searchTTL, staleIfError: staleIfError)
        detailPolicy = CachePolicy(ttl: detailTTL, staleWhileRevalidate: detailTTL, staleIfError: staleIfError)
        notFoundTTL = TimeInterval(settings.int("catalog.notFoundTtlSeconds", default: 600, in: 0...86_400))
        recordTTL = TimeInterval(settings.int("catalog.recordTtlSeconds", default: 7 * 86_400, in: 60...(90 * 86_400)))
        pageDeadline = .milliseconds(settings.int("catalog.pageDeadlineMs", default: 4000, in: 100...60_000))
        userRate = Double(settings.int("catalog.userRatePerSecond", default: 5, in: 1...1_000_000))
        datasetRefresh = TimeInterval(settings.int("catalog.datasetRefreshSeconds", default: 3600, in: 60...(30 * 86_400)))
        // At most half the overview's life, so a user never finds it expired while the refresh works.
        let refresh = settings.int("catalog.bestsellersRefreshSeconds", default: 3600,
                                   in: 0...Int(BestsellersSource.overviewLife / 2))
        bestsellersRefresh = refresh > 0 && upstreams[.nytBooks]?.apiKey != nil ? TimeInterval(refresh) : nil
        nytCallsPerMinute = nytPerMinute
        try settings.validate()
    }
}
