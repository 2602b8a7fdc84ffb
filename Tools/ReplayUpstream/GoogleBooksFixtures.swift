import Foundation

/// Google Books' volume search (`www.googleapis.com/books/v1/volumes`) as the replay plays it.
///
/// An ISBN query (`isbn:<n>`, as apps send it also `+isbn:<n>`) is answered with the recorded ISBN lookup when it names
/// that book, else with the one item of the recorded free-text search that carries the ISBN, else with upstream's
/// empty answer, which has no `items` key at all. Any other query gets the recorded free-text search. Two key values
/// stand for a spent daily quota, so a client's handling of it is testable without fault injection: `spent` gets the
/// 429 upstream sends when over quota, `spent400` the 400 some quota errors come as.
struct GoogleBooksFixtures: Sendable {
    static let isbnCapture = "google-books/atj2097-volumes-isbn-0316420271.json"
    static let searchCapture = "google-books/cmsanner-volumes-q-search.json"

    static let empty = Data(#"{"kind":"books#volumes","totalItems":0}"#.utf8)
    static let quotaMessage =
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service 'books.googleapis.com' for consumer 'project_number:0'."
    static let missingQuery = Data(
        #"{"error":{"code":400,"message":"Missing query.","errors":[{"message":"Missing query.","domain":"global","reason":"queryRequired","location":"q","locationType":"parameter"}]}}"#
            .utf8)

    /// The recorded ISBN lookup, verbatim.
    let isbnBody: Data
    /// The ISBNs (10 and 13) of the recorded lookup's items.
    let isbnBodyISBNs: Set<String>
    /// The recorded free-text search, verbatim.
    let searchBody: Data
    /// Each item of the free-text search with its ISBNs, in the recording's order.
    let searchItems: [(isbns: Set<String>, json: Data)]

    init(root: URL) throws {
        isbnBody = try Data(contentsOf: root.appending(path: Self.isbnCapture))
        searchBody = try Data(contentsOf: root.appending(path: Self.searchCapture))
        isbnBodyISBNs = Self.items(try FixtureCatalog.object(isbnBody)).reduce(into: []) { $0.formUnion(Self.isbns($1)) }
        searchItems = try Self.items(try FixtureCatalog.object(searchBody)).map { item in
            (Self.isbns(item), try JSONSerialization.data(withJSONObject: item, options: [.withoutEscapingSlashes]))
        }
    }

    func volumes(_ query: [String: String]) throws -> (Int, Data) {
        switch query["key"] {
        case "spent": return (429, try Self.quotaError(code: 429, domain: "global", reason: "rateLimitExceeded",
                                                         status: "RESOURCE_EXHAUSTED"))
        case "spent400": return (400, try Self.quotaError(code: 400, domain: "usageLimits", reason: "dailyLimitExceeded",
                                                            status: "INVALID_ARGUMENT"))
        default: break
        }
        guard let q = query["q"], !q.trimmingCharacters(in: .whitespaces).isEmpty else { return (400, Self.missingQuery) }
        guard let isbn = Self.isbn(in: q) else { return (200, searchBody) }
        if isbnBodyISBNs.contains(isbn) { return (200, isbnBody) }
        guard let item = searchItems.first(where: { $0.isbns.contains(isbn) }) else { return (200, Self.empty) }
        let body = #"{"kind":"books#volumes","totalItems":1,"items":\#(FixtureCatalog.array([item.json]))}"#
        return (200, Data(body.utf8))
    }

    /// The ISBN of a query that is only `isbn:<n>` (leading `+` or spaces, hyphens inside allowed), upper-cased so a
    /// check digit `x` matches; nil for any other query.
    static func isbn(in q: String) -> String? {
        let trimmed = q.drop { $0 == "+" || $0 == " " }
        guard trimmed.lowercased().hasPrefix("isbn:") else { return nil }
        let isbn = trimmed.dropFirst(5).filter { $0 != "-" && $0 != " " }.uppercased()
        guard !isbn.isEmpty, isbn.allSatisfy({ ("0"..."9").contains($0) || $0 == "X" }) else { return nil }
        return isbn
    }

    private static func quotaError(code: Int, domain: String, reason: String, status: String) throws -> Data {
        let error: [String: Any] = [
            "code": code, "message": quotaMessage,
            "errors": [["message": quotaMessage, "domain": domain, "reason": reason]], "status": status,
        ]
        return try JSONSerialization.data(withJSONObject: ["error": error])
    }

    private static func items(_ body: [String: Any]) -> [[String: Any]] {
        (body["items"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
    }

    /// An item's `ISBN_10` and `ISBN_13` identifiers (not `OTHER` ones), upper-cased.
    private static func isbns(_ item: [String: Any]) -> Set<String> {
        let identifiers = (item["volumeInfo"] as? [String: Any])?["industryIdentifiers"] as? [Any] ?? []
        return Set(identifiers.compactMap { identifier -> String? in
            guard let identifier = identifier as? [String: Any], let type = identifier["type"] as? String,
                  type.hasPrefix("ISBN"), let value = identifier["identifier"] as? String
            else { return nil }
            return value.uppercased()
        })
    }
}
