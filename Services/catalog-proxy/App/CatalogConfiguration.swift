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
    /// Every setting read here, as declared (see ``StrictSettings/declared``).
    let declaredSettings: [Setting]

    init(reader: ConfigReader) throws {
        var settings = StrictSettings(reader: reader)
        let timeout = Duration.milliseconds(settings.int("upstream.timeoutMs", default: 3000, in: 100...60_000,
            help: "Bound on one attempt, from waiting for a call slot to the body's last byte."))
        let attempts = settings.int("upstream.attempts", default: 2, in: 1...5,
            help: """
            Attempts per call; only timeouts, connection failures and 5xx are retried, after 50 ms to 150 ms × \
            attempt (a redirect not followed is not).
            """)
        let breakerCooldown = TimeInterval(settings.int("upstream.breakerCooldownSeconds", default: 30, in: 1...3600,
            help: """
            After five failed attempts in a row an upstream's breaker refuses calls this long, then lets one trial \
            through.
            """))
        let userShare = Double(settings.int("catalog.userUpstreamSharePercent", default: 20, in: 1...100,
            help: """
            What one user's requests may spend of each upstream budget, in each of its windows (at least one call, \
            and two of a per-second bucket that holds two, so a search and the detail tapped right after go \
            through): of the per-second bucket on each replica, of the sliding windows and the daily quota for all \
            replicas together (`catalog.upstream_calls`). Past it that user gets 429 `rate-limited` with \
            `Retry-After`; nobody else notices. The museum, which publishes no limit, is not shared out.
            """)) / 100
        func upstream(url: String, default defaultURL: String, help: String,
                      key: (setting: String, parameter: String, help: String)?, rate: Double,
                      burst: Double, quota: Int?, queueWait: TimeInterval, rolling: [RollingLimit] = [],
                      sharedPerUser: Bool = true) -> UpstreamSettings {
            var upstream = UpstreamSettings(
                baseURL: settings.baseURL(url, default: defaultURL, help: help),
                apiKey: key.flatMap { settings.optionalString($0.setting, isSecret: true, help: $0.help) },
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
        let ticketmasterRate = Double(settings.int("ticketmaster.ratePerSecond", default: 5, in: 1...1000,
            help: """
            Calls per second per replica; the bucket holds one second's worth. Past it: 503 \
            `upstream-rate-limited`.
            """))
        let ticketmasterQuota = settings.int("ticketmaster.dailyQuota", default: 5000, in: 1...10_000_000,
            help: """
            Calls per UTC day, shared by all replicas (`catalog.upstream_quota_days`). Spent: 503 until midnight \
            UTC.
            """)
        // A cold page of artworks is a burst of record GETs: up to four per object (object, VisualItem,
        // DigitalObject, a maker named only by reference), 120 for a page of 30. The records' bucket holds a whole
        // page's burst (or three seconds' worth, if more), so the first user of a cold page never waits for tokens;
        // past it, calls wait a little rather than leave items out. The museum publishes no limit (this one is ours,
        // to be polite: one page's burst, then the rate) and one user's page needs the whole burst, so it is not
        // shared out per user: another user's calls wait for tokens rather than fail, and each user's requests are
        // bounded by CATALOG_USER_RATE_PER_SECOND.
        let rijksmuseumRate = Double(settings.int("rijksmuseum.ratePerSecond", default: 20, in: 1...1000,
            help: """
            Calls per second per replica, to each of the two hosts; the bucket holds three seconds' worth (the \
            records' host at least 120, a cold page of 30 objects' record GETs, so its first user never waits for \
            tokens), and a call waits up to 2 s for a token before 503.
            """))
        let pageOfRecords = Double(RijksmuseumSource.recordsPerObject * RijksmuseumSource.pageSize)
        var rijksmuseumSearch = upstream(
            url: "rijksmuseum.searchUrl", default: "https://data.rijksmuseum.nl",
            help: "The museum's search service. No key.", key: nil,
            rate: rijksmuseumRate, burst: rijksmuseumRate * 3, quota: nil, queueWait: 2, sharedPerUser: false)
        var rijksmuseumRecords = upstream(
            url: "rijksmuseum.recordsUrl", default: "https://data.rijksmuseum.nl",
            help: """
            The museum's Linked Art records, asked of the metadata host directly (one hop fewer than the resolver). No key. The resolver `https://id.rijksmuseum.nl` works too: redirects are followed between the museum's two hosts and the two configured ones, never elsewhere, never from https to http, at most 3 in a row.
            """,
            key: nil,
            rate: rijksmuseumRate, burst: max(rijksmuseumRate * 3, pageOfRecords), quota: nil, queueWait: 2,
            sharedPerUser: false)
        // The museum's resolver answers a record id with 303 to its metadata on the data host: between the museum's
        // two hosts, and only there, redirects are followed.
        let museumHosts = UpstreamRedirect(allowing: [rijksmuseumSearch.baseURL, rijksmuseumRecords.baseURL,
                                                      "https://id.rijksmuseum.nl", "https://data.rijksmuseum.nl"])
        rijksmuseumSearch.redirect = museumHosts
        rijksmuseumRecords.redirect = museumHosts
        let nytDailyQuota = settings.int("nytBooks.dailyQuota", default: 500, in: 1...1_000_000,
            help: "Calls in any 24 hours, the same way.")
        let nytPerMinute = settings.int("nytBooks.callsPerMinute", default: 5, in: 1...10_000,
            help: """
            Calls in any 60 seconds (a sliding window, as the NYT counts), for all replicas together \
            (`catalog.upstream_calls`); past it 503 `upstream-rate-limited` with the seconds until the oldest call \
            leaves the window.
            """)
        upstreams = [
            .ticketmaster: upstream(
                url: "ticketmaster.url", default: "https://app.ticketmaster.com",
                help: "Base URL of the Discovery API: http(s), host, optional port and path prefix.",
                key: ("ticketmaster.apiKey", "apikey", "**Secret.** Sent as `apikey`. Unset: calls go without a key and the real API refuses them (502)."), rate: ticketmasterRate, burst: ticketmasterRate,
                quota: ticketmasterQuota, queueWait: 0),
            .rijksmuseumSearch: rijksmuseumSearch,
            .rijksmuseumRecords: rijksmuseumRecords,
            // 5 calls in any 60 seconds and 500 in any day (the NYT's own limits), counted for every replica in
            // PostgreSQL; lists are kept for hours, so only new lists cost calls.
            .nytBooks: upstream(
                url: "nytBooks.url", default: "https://api.nytimes.com", help: "The NYT Books API (the best sellers).",
                key: ("nytBooks.apiKey", "api-key", "**Secret.** Sent as `api-key`. Unset: the real API refuses the calls (502)."),
                rate: 1, burst: 5, quota: nil, queueWait: 0,
                rolling: [RollingLimit(calls: nytPerMinute, window: 60), RollingLimit(calls: nytDailyQuota, window: 86_400)]),
            .googleBooks: upstream(
                url: "googleBooks.url", default: "https://www.googleapis.com", help: "Google Books, for a book's detail.",
                key: ("googleBooks.apiKey", "key", """
                    Optional: sent as `key`. Without one Google's shared quota is often spent; a detail then carries the list's facts (`enriched: false`).
                    """),
                rate: Double(settings.int("googleBooks.ratePerSecond", default: 5, in: 1...1000,
                    help: "Calls per second per replica.")), burst: 5,
                quota: settings.int("googleBooks.dailyQuota", default: 1000, in: 1...10_000_000,
                    help: """
                    Calls per UTC day, shared by all replicas. Spent: details carry the list's facts (`enriched: \
                    false`).
                    """), queueWait: 0),
            .flashcards: upstream(
                url: "flashcards.url", default: "https://5daf8b36f2946f001481d81c.mockapi.io",
                help: "The public cards endpoint (`/api/v2/cards`), refreshing the cards' dataset.", key: nil,
                rate: 1, burst: 2, quota: nil, queueWait: 0),
        ]
        // The brief's host is gone: without a configured copy, the phones are the loaded dataset only.
        if settings.optionalString("mobiles.url",
            help: """
            A host serving the phones API (`/api/mobiles/…`). Unset: the phones are the dataset loaded by \
            `catalog-proxy load mobiles`; set: that dataset is refreshed from it.
            """) != nil {
            upstreams[.mobiles] = upstream(url: "mobiles.url", default: "", help: "", key: nil, rate: 5, burst: 10, quota: nil,
                                           queueWait: 2)
        }
        cacheBytes = settings.int("catalog.cacheMb", default: 64, in: 1...16_384,
            help: "Each replica's response cache (bodies plus 256 bytes each), least recently used out first.") << 20
        let staleIfError = TimeInterval(settings.int("catalog.staleIfErrorSeconds", default: 86_400,
                                                     in: 0...(30 * 86_400),
            help: """
            How long past freshness a copy is still served (`X-Cache: stale`) while the upstream fails: cached \
            responses, the shared last copies of items, resolved museum items. 0 turns it off.
            """))
        let searchTTL = TimeInterval(settings.int("catalog.searchTtlSeconds", default: 60, in: 1...86_400,
            help: """
            A cached list (a search, a browse, a dataset's page) is fresh this long, then served for as long again \
            while one background load refreshes it.
            """))
        let detailTTL = TimeInterval(settings.int("catalog.detailTtlSeconds", default: 600, in: 1...86_400,
            help: "The same for details."))
        // Revalidate in the background for as long again as the TTL: popular searches never wait on the upstream.
        searchPolicy = CachePolicy(ttl: searchTTL, staleWhileRevalidate: searchTTL, staleIfError: staleIfError)
        detailPolicy = CachePolicy(ttl: detailTTL, staleWhileRevalidate: detailTTL, staleIfError: staleIfError)
        notFoundTTL = TimeInterval(settings.int("catalog.notFoundTtlSeconds", default: 600, in: 0...86_400,
            help: """
            How long each replica remembers an upstream's \"no such item\"; asking again costs no call. 0 turns it \
            off.
            """))
        recordTTL = TimeInterval(settings.int("catalog.recordTtlSeconds", default: 7 * 86_400, in: 60...(90 * 86_400),
            help: """
            How long a resolved museum item (and a maker's record) is fresh for every replica; then it is resolved \
            again when asked for.
            """))
        pageDeadline = .milliseconds(settings.int("catalog.pageDeadlineMs", default: 4000, in: 100...60_000,
            help: """
            How long a search page waits for its items to resolve; the rest are left out and the page says \
            `partial: true`.
            """))
        userRate = Double(settings.int("catalog.userRatePerSecond", default: 5, in: 1...1_000_000,
            help: """
            Catalog requests (lists, details, categories) per user per replica, bursts of 4×; past it 429 \
            `rate-limited`.
            """))
        datasetRefresh = TimeInterval(settings.int("catalog.datasetRefreshSeconds", default: 3600, in: 60...(30 * 86_400),
            help: """
            How old a dataset (phones, cards) may get before it is refreshed from its upstream, in the background, \
            by one replica.
            """))
        // At most half the overview's life, so a user never finds it expired while the refresh works.
        let refresh = settings.int("catalog.bestsellersRefreshSeconds", default: 3600,
                                   in: 0...Int(BestsellersSource.overviewLife / 2),
            help: """
            How often the scheduled refresh fetches the NYT's overview of every current list again (one replica, \
            holding a lease in `catalog.refresh_leases`); it also keeps the list names and the lists the overview \
            does not carry, within two of the NYT's calls a minute. `0`, or no `NYT_BOOKS_API_KEY`: no scheduled \
            refresh, lists are fetched as users pick them.
            """)
        bestsellersRefresh = refresh > 0 && upstreams[.nytBooks]?.apiKey != nil ? TimeInterval(refresh) : nil
        nytCallsPerMinute = nytPerMinute
        declaredSettings = settings.declared
        try settings.validate()
    }
}
