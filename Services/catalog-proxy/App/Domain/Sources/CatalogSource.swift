import Contracts
import Foundation

/// What a list asks of a source: search text (empty to browse), a category where the source has them, an order.
struct SearchQuery: Sendable, Hashable {
    var text: String
    var category: String?
    var sort: ListSort

    /// A key for caches: every field, none able to contain the separator unescaped.
    var cacheKey: String {
        [text.lowercased(), category ?? "", sort.rawValue]
            .map { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0 }.joined(separator: "|")
    }

    /// 16 hex digits that tell this search of `experience` from any other (FNV-1a of its cache key): what a page's
    /// next cursor carries, so that it is not taken with another search. A check against mistakes, not a secret.
    func fingerprint(in experience: ExperienceID) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(experience.rawValue)|\(cacheKey)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// One page of a source's search results: items ready to serve, or references the proxy resolves into items
/// (each through ``CatalogSource/resolve(reference:)``, kept for all replicas once resolved).
struct SearchResults: Sendable, Equatable {
    var entries: [SearchEntry]
    /// Where the next page starts; nil on the last page the source lets us reach.
    var next: PageCursor?
}

enum SearchEntry: Sendable, Equatable {
    case item(CatalogItem)
    /// The source's own key of a record that still has to be fetched and read (a Rijksmuseum record number).
    case reference(String)
}

/// What a detail lookup found.
enum DetailResult: Sendable, Equatable {
    case item(CatalogItem)
    /// The item without some facts a call that failed would have added: served, not kept, so the next request tries
    /// again.
    case incomplete(CatalogItem)
    /// The item is this record: resolve it as a search result's reference (and find it among those kept).
    case reference(String)
    case notFound
}

/// A catalog behind the proxy. Adding a source means writing one of these and adding it to the list in `CatalogProxy+build.swift`.
///
/// A source is pure: it says which upstream calls an answer needs and reads their bodies (``SourceStep``), and never
/// does I/O. The proxy runs the calls with the upstream's key, timeouts, limits, retries and breaker, and caches the
/// outcome.
protocol CatalogSource: Sendable {
    var experience: ExperienceID { get }
    /// The upstreams this source calls, each configured on its own.
    var upstreams: [UpstreamName] { get }
    /// The largest page the source serves well; `limit` is clamped to it.
    var maximumPageSize: Int { get }

    /// The source's spelling of `id`, or nil when it does not have the shape of one of this source's ids: anything
    /// else never reaches an upstream path.
    func canonicalID(_ id: String) -> String?
    /// Whether a page starting at `cursor` is one the source lets a client reach (and one this source could have
    /// handed out).
    func isReachable(_ cursor: PageCursor) -> Bool
    func search(_ query: SearchQuery, at cursor: PageCursor) -> SourceStep<SearchResults>
    /// The item with this id. `known` is the last copy of it the proxy kept from a list, for sources that say they
    /// build on it (``detailBuildsOnListedCopy``): the best sellers enrich a listed book from Google Books.
    func detail(id: String, known: CatalogItem?) -> SourceStep<DetailResult>
    var detailBuildsOnListedCopy: Bool { get }
    /// The source's categories; nil when it has none.
    func categories() -> SourceStep<[CatalogCategory]>?
    /// Whether search results are references resolved into items (and kept): a detail then looks among those kept
    /// first.
    var resolvesReferences: Bool { get }
    /// The item a search result's reference stands for; nil when the upstream no longer has it.
    func resolve(reference: String) -> SourceStep<CatalogItem?>
    /// A resolved (detailed) item as a list cell shows it: sources whose references resolve to full details trim
    /// them here.
    func listing(of item: CatalogItem) -> CatalogItem
    /// The item as the source's list cell shows it, for a source whose cell is more than its detail trimmed: a
    /// Ticketmaster cell picks its own image among the event's pictures. Nil: ``listing(of:)`` of the detail.
    func cell(id: String) -> SourceStep<DetailResult>?
}

enum SourceError: Error, Equatable {
    case malformedBody(String)
}

extension CatalogSource {
    /// Sources whose search results are items never see a reference.
    var resolvesReferences: Bool { false }
    var detailBuildsOnListedCopy: Bool { false }
    func categories() -> SourceStep<[CatalogCategory]>? { nil }
    func resolve(reference: String) -> SourceStep<CatalogItem?> { .done(nil) }
    func listing(of item: CatalogItem) -> CatalogItem { item }
    func cell(id: String) -> SourceStep<DetailResult>? { nil }
}

/// Helpers shared by the adapters for the sources' loose data.
enum Upstream {
    /// Trims and collapses runs of whitespace (venue names come padded and double-spaced); empty becomes nil, and so
    /// does a placeholder (``placeholders``): a fact the upstream does not have is absent, never a word standing in.
    static func clean(_ text: String?) -> String? {
        guard let collapsed = collapsed(text), !placeholders.contains(collapsed.lowercased()) else { return nil }
        return collapsed
    }

    /// Trims and collapses runs of whitespace; empty becomes nil. For text people wrote (a card's fact may well be
    /// "None"), where no word is a placeholder.
    static func collapsed(_ text: String?) -> String? {
        guard let text else { return nil }
        let collapsed = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return collapsed.isEmpty ? nil : collapsed
    }

    /// What upstreams write where they have no value: the NYT's lists give `"None"` for a book without an ISBN-10.
    static let placeholders: Set<String> = ["none", "null", "nil", "n/a", "undefined", "-"]

    /// A date or time as the upstream writes it, without the zero dates that stand for "unknown" (`0000-00-00`,
    /// `0000`, `0001-01-01T00:00:00`, the epoch's first instant): nil for those, as for a placeholder.
    static func date(_ text: String?) -> String? {
        guard let text = clean(text) else { return nil }
        let zero = text.hasPrefix("0000") || text.hasPrefix("0001-01-01") || text.hasPrefix("1970-01-01T00:00:00")
        return zero ? nil : text
    }

    /// An image or link URL fit for an app: https only (http upgraded, protocol-relative and scheme-less ones like
    /// `www.91-img.com/…` completed), else nil.
    static func secureURL(_ text: String?) -> String? {
        guard var text = clean(text) else { return nil }
        if text.hasPrefix("//") { text = "https:" + text }
        if !text.contains("://"), let host = text.split(separator: "/").first, host.contains("."),
           host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) {
            text = "https://" + text
        }
        if text.lowercased().hasPrefix("http://") { text = "https://" + text.dropFirst("http://".count) }
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", url.host != nil else { return nil }
        return text
    }

    /// Decodes a JSON body, turning any failure into ``SourceError/malformedBody(_:)`` (a 502, never a crash).
    static func decode<Value: Decodable>(_ type: Value.Type, from body: Data, source: String) throws -> Value {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw SourceError.malformedBody("\(source) sent a body that is not what it documents")
        }
    }
}

/// Decodes an array element by element, dropping elements that do not decode: one odd event must not cost the
/// whole page.
struct LossyArray<Element: Decodable>: Decodable {
    var elements: [Element]

    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var elements: [Element] = []
        while !container.isAtEnd {
            if let element = try? container.decode(Element.self) {
                elements.append(element)
            } else {
                _ = try? container.decode(Skipped.self)
            }
        }
        self.elements = elements
    }

    /// Accepts any JSON value without reading it, so the container moves past the bad element.
    private struct Skipped: Decodable {
        init(from decoder: any Decoder) throws {}
    }
}

extension KeyedDecodingContainer {
    /// The value at `key`, or nil when it is missing, null or of another shape than expected.
    func lenient<Value: Decodable>(_ key: Key, as type: Value.Type = Value.self) -> Value? {
        (try? decodeIfPresent(type, forKey: key)) ?? nil
    }
}

/// A number that sources send as an integer, a decimal or a string (`179`, `179.99`, `"0.00"`); anything else is nil.
struct LenientNumber: Decodable, Sendable {
    var value: Double?

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            value = number.isFinite ? number : nil
        } else if let text = try? container.decode(String.self), let number = Double(text.trimmingCharacters(in: .whitespaces)) {
            value = number.isFinite ? number : nil
        }
    }

    var integer: Int? { value.flatMap { $0.rounded() == $0 && abs($0) < 1e15 ? Int($0) : nil } }
}
