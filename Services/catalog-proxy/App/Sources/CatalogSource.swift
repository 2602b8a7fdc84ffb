import Contracts
import Foundation

/// A request to an upstream, relative to the source's configured base URL. Only a source builds one, from validated
/// input: no caller ever chooses a host, a scheme or a path (SSRF).
struct UpstreamRequest: Sendable, Hashable {
    /// Path below the base URL, already percent-encoded where needed.
    var path: String
    var query: [QueryItem]

    struct QueryItem: Sendable, Hashable {
        var name: String
        var value: String
    }
}

/// One page of a source's search results.
struct SearchResults: Sendable, Equatable {
    var items: [CatalogItem]
    /// Whether the source has (and lets us reach) a next page.
    var hasMore: Bool
}

/// A catalog behind the proxy. Adding a source means writing one of these and registering it in ``CatalogSources``.
///
/// A source is pure: it builds requests and decodes bodies, and never does I/O. The proxy's upstream client adds
/// the API key, runs the request with timeouts, limits, retries and a breaker, and caches the outcome.
protocol CatalogSource: Sendable {
    var experience: ExperienceID { get }
    /// The query parameter that carries the API key (`apikey`, `key`).
    var keyParameter: String { get }
    /// The largest page the source serves well; `limit` is clamped to it.
    var maximumPageSize: Int { get }
    /// How deep the source lets a client page: page index (zero-based) × size must stay within it.
    var maximumDepth: Int { get }

    /// The source's spelling of `id`, or nil when it does not have the shape of one of this source's ids: anything
    /// else never reaches an upstream path.
    func canonicalID(_ id: String) -> String?
    func searchRequest(text: String, page: Int, pageSize: Int) -> UpstreamRequest
    func detailRequest(id: String) -> UpstreamRequest
    /// Throws ``SourceError/malformedBody`` when the body is not what the source sends.
    func decodeSearch(_ body: Data, page: Int, pageSize: Int) throws -> SearchResults
    /// Nil when the source says the item does not exist.
    func decodeDetail(_ body: Data) throws -> CatalogItem?
    /// Whether an upstream status means "no such item" for a detail request.
    func isNotFound(status: Int, body: Data) -> Bool
}

enum SourceError: Error, Equatable {
    case malformedBody(String)
}

extension CatalogSource {
    /// Whether page `page` (zero-based) of `pageSize` items is within the source's paging limit. Divides rather than
    /// multiplies: a cursor may carry any page number, and an overflow would stop the process.
    func isReachable(page: Int, pageSize: Int) -> Bool {
        pageSize > 0 && page >= 0 && page < maximumDepth / pageSize
    }
}

/// Helpers shared by the adapters for the sources' loose data.
enum Upstream {
    /// Trims and collapses runs of whitespace (venue names come padded and double-spaced); empty becomes nil.
    static func clean(_ text: String?) -> String? {
        guard let text else { return nil }
        let collapsed = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return collapsed.isEmpty ? nil : collapsed
    }

    /// An image or link URL fit for an app: https only (http upgraded, protocol-relative completed), else nil.
    static func secureURL(_ text: String?) -> String? {
        guard var text = clean(text) else { return nil }
        if text.hasPrefix("//") { text = "https:" + text }
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
