import Contracts
import Foundation

/// Ticketmaster Discovery v2: events searched by city (the app's search bar), with the details the event screen
/// shows.
struct TicketmasterSource: CatalogSource {
    let experience = ExperienceID.ticketmaster
    let upstreams = [UpstreamName.ticketmaster]
    let maximumPageSize = 50
    /// Discovery refuses `page * size >= 1000`.
    let maximumDepth = 1000

    /// Event ids are 13 to 21 characters of `A–Z a–z 0–9 _ -` in every recording; the length allowed is generous,
    /// the alphabet strict (no `.`, `/`, `%`).
    func canonicalID(_ id: String) -> String? {
        id.wholeMatch(of: #/[A-Za-z0-9_-]{1,64}/#) != nil ? id : nil
    }

    /// Pages by number only. Divides rather than multiplies: a cursor may carry any page number, and an overflow
    /// would stop the process.
    func isReachable(_ cursor: PageCursor) -> Bool {
        cursor.phase == 0 && cursor.token == nil && cursor.offset == 0 && cursor.pageSize <= maximumPageSize
            && cursor.page < maximumDepth / cursor.pageSize
    }

    func search(_ query: SearchQuery, at cursor: PageCursor) -> SourceStep<SearchResults> {
        let request = UpstreamRequest(upstream: .ticketmaster, path: "/discovery/v2/events.json", query: [
            .init(name: "city", value: query.text), .init(name: "size", value: String(cursor.pageSize)),
            .init(name: "page", value: String(cursor.page)), .init(name: "sort", value: "date,asc"),
        ])
        return .fetch(request) { answer in
            // A 404 is an answer for a detail only: a search that gets one must not read as an empty page.
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            return .done(try decodeSearch(answer.body, at: cursor))
        }
    }

    func detail(id: String, known: CatalogItem?) -> SourceStep<DetailResult> {
        .fetch(eventRequest(id)) { answer in
            .done(answer.isNotFound ? .notFound : .item(try decodeDetail(answer.body)))
        }
    }

    /// The event as its list cell shows it (what a favorite keeps): the same answer as the detail's, read as a search
    /// result is, so the cell has the list's image.
    func cell(id: String) -> SourceStep<DetailResult>? {
        .fetch(eventRequest(id)) { answer in
            guard !answer.isNotFound else { return .done(.notFound) }
            return .done(.item(item(from: try Upstream.decode(Event.self, from: answer.body, source: "Ticketmaster"),
                                    detailed: false)))
        }
    }

    private func eventRequest(_ id: String) -> UpstreamRequest {
        UpstreamRequest(upstream: .ticketmaster, path: "/discovery/v2/events/\(id).json")
    }

    func decodeSearch(_ body: Data, at cursor: PageCursor) throws -> SearchResults {
        let envelope = try Upstream.decode(SearchEnvelope.self, from: body, source: "Ticketmaster")
        let items = (envelope._embedded?.events.elements ?? []).map { item(from: $0, detailed: false) }
        let total = envelope.page?.totalElements ?? items.count
        var next = cursor
        next.page += 1
        let hasMore = isReachable(next) && next.page * cursor.pageSize < total
        return SearchResults(entries: items.map(SearchEntry.item), next: hasMore ? next : nil)
    }

    func decodeDetail(_ body: Data) throws -> CatalogItem {
        item(from: try Upstream.decode(Event.self, from: body, source: "Ticketmaster"), detailed: true)
    }

    func item(from event: Event, detailed: Bool) -> CatalogItem {
        let venue = event._embedded?.venues?.first
        let start = event.dates?.start
        let facts = EventFacts(
            localDate: Upstream.date(start?.localDate), localTime: Upstream.clean(start?.localTime),
            startsAt: Upstream.date(start?.dateTime).flatMap { try? Date($0, strategy: .iso8601) },
            timeZone: Upstream.clean(event.dates?.timezone ?? venue?.timezone),
            dateTBA: start?.dateTBA ?? false, dateTBD: start?.dateTBD ?? false, timeTBA: start?.timeTBA ?? false,
            noSpecificTime: start?.noSpecificTime ?? false,
            status: Upstream.clean(event.dates?.status?.code),
            venue: venue.flatMap { venue in
                Upstream.clean(venue.name).map {
                    EventFacts.Venue(name: $0, city: Upstream.clean(venue.city?.name),
                                     stateCode: venue.state?.stateCode, countryCode: venue.country?.countryCode)
                }
            },
            // A list cell shows what the favorites cell shows: prices, the ticket link and the notes as well.
            priceRanges: event.priceRanges.flatMap { ranges in
                ranges.isEmpty ? nil : ranges.map {
                    EventFacts.PriceRange(type: Upstream.clean($0.type), currency: Upstream.clean($0.currency),
                                          min: $0.min, max: $0.max)
                }
            },
            ticketURL: Upstream.secureURL(event.url),
            info: Upstream.clean(event.info ?? event.pleaseNote ?? event.description)
        )
        let place = [facts.venue?.name, facts.venue?.city].compactMap { $0 }.joined(separator: ", ")
        return CatalogItem(
            id: event.id, experience: experience, title: Upstream.clean(event.name) ?? event.id,
            subtitle: place.isEmpty ? nil : place, imageURL: bestImage(event.images ?? [], detailed: detailed),
            event: facts
        )
    }

    /// A real picture (not Ticketmaster's generic fallback) in 16:9, the smallest at least 640 px wide for a list
    /// cell (and so a favorite), the largest for the detail screen.
    func bestImage(_ images: [Event.Image], detailed: Bool) -> String? {
        let usable = images.filter { Upstream.secureURL($0.url) != nil }
        let preferred = usable.filter { $0.fallback != true && $0.ratio == "16_9" }
        let pool = preferred.isEmpty ? usable : preferred
        let chosen = detailed
            ? pool.max { ($0.width ?? 0) < ($1.width ?? 0) }
            : pool.filter { ($0.width ?? 0) >= 640 }.min { ($0.width ?? 0) < ($1.width ?? 0) }
                ?? pool.max { ($0.width ?? 0) < ($1.width ?? 0) }
        return Upstream.secureURL(chosen?.url)
    }

    // The upstream shapes: every field optional except the id, so a missing one degrades the item, not the page.

    struct SearchEnvelope: Decodable {
        var _embedded: Embedded?
        var page: Page?
        struct Embedded: Decodable { var events: LossyArray<Event> }
        struct Page: Decodable { var totalElements: Int? }
    }

    struct Event: Decodable {
        var id: String
        var name: String?
        var url: String?
        var info: String?
        var pleaseNote: String?
        var description: String?
        var images: [Image]?
        var dates: Dates?
        var priceRanges: [PriceRange]?
        var _embedded: Embedded?

        enum CodingKeys: String, CodingKey {
            case id, name, url, info, pleaseNote, description, images, dates, priceRanges, _embedded
        }

        /// Only the id is required; any other field of an unexpected shape is dropped, not fatal.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            name = container.lenient(.name)
            url = container.lenient(.url)
            info = container.lenient(.info)
            pleaseNote = container.lenient(.pleaseNote)
            description = container.lenient(.description)
            images = container.lenient(.images, as: LossyArray<Image>.self)?.elements
            dates = container.lenient(.dates)
            priceRanges = container.lenient(.priceRanges, as: LossyArray<PriceRange>.self)?.elements
            _embedded = container.lenient(._embedded)
        }

        struct Image: Decodable {
            var ratio: String?
            var url: String?
            var width: Int?
            var fallback: Bool?
        }

        struct Dates: Decodable {
            var start: Start?
            var timezone: String?
            var status: Status?
            struct Start: Decodable {
                var localDate: String?
                var localTime: String?
                var dateTime: String?
                var dateTBD: Bool?
                var dateTBA: Bool?
                var timeTBA: Bool?
                var noSpecificTime: Bool?
            }
            struct Status: Decodable { var code: String? }
        }

        /// `min`/`max` come as integers or decimals; both decode as `Double`.
        struct PriceRange: Decodable {
            var type: String?
            var currency: String?
            var min: Double?
            var max: Double?
        }

        struct Embedded: Decodable { var venues: [Venue]? }
        struct Venue: Decodable {
            var name: String?
            var timezone: String?
            var city: Named?
            var state: State?
            var country: Country?
            struct Named: Decodable { var name: String? }
            struct State: Decodable { var stateCode: String? }
            struct Country: Decodable { var countryCode: String? }
        }
    }
}
