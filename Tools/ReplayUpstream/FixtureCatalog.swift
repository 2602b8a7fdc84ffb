import Foundation
import Locking

/// The recorded upstream responses, loaded once, and the answers built from them.
///
/// Ticketmaster: recorded requests are answered with their recorded bodies; other searches are answered from the pool
/// of recorded events (so a keyless local stack can search any city or name the recordings cover); other ids get the
/// upstream's own "not found". The other upstreams each have their own type: ``RijksmuseumFixtures``,
/// ``NYTBooksFixtures``, ``GoogleBooksFixtures``, ``MobilesFixtures`` and ``FlashCardsFixtures``.
struct FixtureCatalog: Sendable {
    /// A recorded event, with what the synthesized searches match on.
    struct Recorded: Sendable {
        var id: String
        /// Folded text a search must equal (a venue city) or contain (a name).
        var place: String
        var text: String
        var json: Data
    }

    let root: URL
    let events: [Recorded]
    let rijksmuseum: RijksmuseumFixtures
    let nytBooks: NYTBooksFixtures
    let googleBooks: GoogleBooksFixtures
    let mobiles: MobilesFixtures
    let flashCards: FlashCardsFixtures

    init(root: URL) throws {
        self.root = root
        events = try Self.loadEvents(root)
        rijksmuseum = try RijksmuseumFixtures(root: root)
        nytBooks = try NYTBooksFixtures(root: root)
        googleBooks = try GoogleBooksFixtures(root: root)
        mobiles = try MobilesFixtures(root: root)
        flashCards = try FlashCardsFixtures(root: root)
    }

    /// The catalog of `root`, built once per process: building it composes thousands of JSON documents, which every
    /// replay of a test run would otherwise do again, side by side. (Composed bodies are written without sorted keys:
    /// corelibs Foundation's JSONSerialization has crashed sorting them, on a freed bridged string.)
    static func loaded(root: URL) throws -> FixtureCatalog {
        try built.withLock { catalogs in
            if let catalog = catalogs[root.standardizedFileURL.path] { return catalog }
            let catalog = try FixtureCatalog(root: root)
            catalogs[root.standardizedFileURL.path] = catalog
            return catalog
        }
    }

    private static let built = Locked<[String: FixtureCatalog]>([:])

    /// Every event of every recorded search, once each (the first recording of an id wins).
    private static func loadEvents(_ root: URL) throws -> [Recorded] {
        var events: [Recorded] = []
        for file in try files(root, "ticketmaster") where !file.contains("detail") && !file.contains("images") {
            let body = try object(try body(root, file))
            for case let event as [String: Any] in (body["_embedded"] as? [String: Any])?["events"] as? [Any] ?? [] {
                guard let id = event["id"] as? String, !events.contains(where: { $0.id == id }) else { continue }
                let venue = ((event["_embedded"] as? [String: Any])?["venues"] as? [Any])?.first as? [String: Any]
                let city = (venue?["city"] as? [String: Any])?["name"] as? String ?? ""
                events.append(Recorded(id: id, place: fold(city), text: fold(event["name"] as? String ?? ""),
                                       json: try JSONSerialization.data(withJSONObject: event)))
            }
        }
        return events
    }

    /// `[a,b,…]` from already-encoded JSON values.
    static func array(_ elements: [Data]) -> String {
        "[" + elements.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ",") + "]"
    }

    // MARK: Ticketmaster

    func ticketmasterSearch(city: String?, keyword: String?, page: Int, size: Int) throws -> (Int, Data) {
        if page * size >= 1000 {
            return (400, Data(#"{"errors":[{"code":"DIS1035","detail":"API Limits Exceeded: Max paging depth exceeded. (page * size) must be less than 1,000","status":"400"}]}"#.utf8))
        }
        let city = city.map(Self.fold), keyword = keyword.map(Self.fold)
        if city == "san francisco", keyword == nil || keyword == "lady gaga", page == 0 {
            return (200, try Self.body(root, "ticketmaster/apguan-events-sanfrancisco-ladygaga.json"))
        }
        let matches = events.filter { event in
            (city.map { event.place == $0 } ?? true) && (keyword.map { event.text.contains($0) } ?? true)
        }
        let slice = Array(matches.dropFirst(page * size).prefix(size))
        let pages = (matches.count + size - 1) / max(size, 1)
        let meta = #""page":{"size":\#(size),"totalElements":\#(matches.count),"totalPages":\#(pages),"number":\#(page)}"#
        let embedded = slice.isEmpty ? "" : #""_embedded":{"events":\#(Self.array(slice.map(\.json)))},"#
        return (200, Data("{\(embedded)\(meta)}".utf8))
    }

    func ticketmasterEvent(id: String) throws -> (Int, Data) {
        switch id {
        case "vv17FZfdGkSrrMju": return (200, try Self.body(root, "ticketmaster/sdkjs-v2-event-detail-200.nock.json"))
        case "G5diZfkn0B-bh": return (200, try Self.body(root, "ticketmaster/tmdocs-v2-event-detail-G5diZfkn0B-bh.json"))
        default:
            if let event = events.first(where: { $0.id == id }) { return (200, event.json) }
            let detail = "Resource not found with provided criteria (locale=en-us, id=\(id))"
            let body: [String: Any] = ["errors": [["code": "DIS1004", "detail": detail, "status": "404"]]]
            return (404, try JSONSerialization.data(withJSONObject: body))
        }
    }

    // MARK: Files

    /// A fixture's HTTP body; nock recordings wrap it as `[{status, response, …}]`.
    static func body(_ root: URL, _ path: String) throws -> Data {
        let data = try Data(contentsOf: root.appending(path: path))
        guard path.hasSuffix(".nock.json"),
              let recording = (try JSONSerialization.jsonObject(with: data) as? [[String: Any]])?.first,
              let response = recording["response"]
        else { return data }
        return try JSONSerialization.data(withJSONObject: response)
    }

    static func object(_ data: Data) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ReplayError.notAnObject
        }
        return object
    }

    static func files(_ root: URL, _ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appending(path: directory).path())
            .filter { $0.hasSuffix(".json") }.sorted().map { "\(directory)/\($0)" }
    }

    static func fold(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespaces).lowercased()
    }
}

enum ReplayError: Error {
    case notAnObject
    case missingRecord(String)
}
