import Foundation

/// One page of the museum's search service answer (`data.rijksmuseum.nl/search/collection`), shaped like the recorded
/// pages: a Linked Art `OrderedCollectionPage` of object ids only, 100 a page, `next` only when more remain.
struct RijksmuseumSearchPage: Encodable {
    struct Link: Encodable {
        var id: String
        var type = "OrderedCollectionPage"
    }

    struct Collection: Encodable {
        var id: String
        var type = "OrderedCollection"
        var totalItems: Int
        var first: Link
        var last: Link
    }

    struct Item: Encodable {
        var id: String
        var type = "HumanMadeObject"
    }

    enum CodingKeys: String, CodingKey {
        case context = "@context", id, type, partOf, next, orderedItems
    }

    static let pageSize = 100
    /// Where the real service lives: every URL in a page names it, as the captures do, whatever host served the page.
    static let endpoint = "https://data.rijksmuseum.nl/search/collection"

    var context = "https://linked.art/ns/v1/search.json"
    var id: String
    var type = "OrderedCollectionPage"
    var partOf: Collection
    var next: Link?
    var orderedItems: [Item]

    /// The page of `numbers` (all hits, in the service's order) that follows the hit `after` (from the request's
    /// `pageToken`), for a request whose raw query string was `query`.
    init(numbers: [String], after: String?, query: String?) {
        let urls = PageURLs(query: query)
        let start = after.map { token in numbers.firstIndex { $0 > token } ?? numbers.count } ?? 0
        let end = min(start + Self.pageSize, numbers.count)
        id = urls.request
        orderedItems = numbers[start..<end].map { Item(id: RijksmuseumFixtures.uri($0)) }
        next = end < numbers.count ? Link(id: urls.page(after: numbers[end - 1])) : nil
        partOf = Collection(id: urls.collection, totalItems: numbers.count, first: Link(id: urls.collection),
                            last: Link(id: Self.lastPageStart(numbers).map(urls.page(after:)) ?? urls.collection))
    }

    /// The hit the last page follows, when there is more than one page: the real service's `last` carries its token.
    private static func lastPageStart(_ numbers: [String]) -> String? {
        guard numbers.count > pageSize else { return nil }
        return numbers[(numbers.count - 1) / pageSize * pageSize - 1]
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The URLs a page names, all on the real service's host: the request itself, the collection (the request
    /// without its `pageToken`), and the page after a given hit (the collection plus that hit's `pageToken`).
    struct PageURLs {
        let request: String
        let collection: String
        private let collectionQuery: String

        init(query: String?) {
            let query = query ?? ""
            collectionQuery = query.split(separator: "&")
                .filter { !$0.isEmpty && $0.split(separator: "=", maxSplits: 1).first != "pageToken" }
                .joined(separator: "&")
            request = query.isEmpty ? RijksmuseumSearchPage.endpoint : "\(RijksmuseumSearchPage.endpoint)?\(query)"
            collection = collectionQuery.isEmpty
                ? RijksmuseumSearchPage.endpoint : "\(RijksmuseumSearchPage.endpoint)?\(collectionQuery)"
        }

        func page(after number: String) -> String {
            "\(collection)\(collectionQuery.isEmpty ? "?" : "&")pageToken=\(PageToken.encode(number))"
        }
    }
}

/// The search service's `pageToken`: base64 of `{"token": "https://id.rijksmuseum.nl/<n>"}`, `n` being the last hit
/// of the previous page, as in the recorded pages (which drop the `=` padding). The replay writes the URL-safe
/// alphabet, identical to the standard one for these texts in practice and safe in a query string either way, and
/// reads both, padded or not.
enum PageToken {
    private struct Body: Codable {
        var token: String
    }

    static func encode(_ number: String) -> String {
        let json = #"{"token": "\#(RijksmuseumFixtures.uri(number))"}"#
        return Data(json.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The hit a token points after; nil when it is not a token this service could have written.
    static func decode(_ token: String) -> String? {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              let body = try? JSONDecoder().decode(Body.self, from: data),
              let number = RijksmuseumFixtures.number(fromURI: body.token)
        else { return nil }
        return number
    }
}
