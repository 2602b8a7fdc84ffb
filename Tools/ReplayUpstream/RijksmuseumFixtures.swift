import Foundation

/// The museum's key-less Linked Art data services as the replay plays them: the search service
/// (`data.rijksmuseum.nl/search/collection`) and the records (`id.rijksmuseum.nl/<n>`).
///
/// Records are the real captures, byte for byte, plus the stand-ins of ``RijksmuseumStandIns``. Searches are
/// answered with the two captured pages when the query is exactly theirs, and otherwise synthesized from the pool of
/// every real and stand-in object, read through the same Linked Art fields, so matching treats both alike.
struct RijksmuseumFixtures: Sendable {
    /// An object a search can return, with the folded text its filters read.
    struct Entry: Sendable {
        var number: String
        /// `produced_by.part[].carried_out_by[].notation` values (none for 2001, whose maker has no notation).
        var makers: [String]
        /// Every `identified_by` Name, English or Dutch, former titles too.
        var titles: [String]
        /// The object number, lower-cased: the filter compares it exactly, ignoring case.
        var objectNumber: String
        /// Whether `shows` leads to a VisualItem whose `digitally_shown_by` leads to a DigitalObject the replay has.
        var hasImage: Bool
    }

    /// Records captured from the real service, by number. Not captured, so 404 here: the visual items of 200117708
    /// (202117708) and of 2001 (2021), which leaves those two objects without an image chain, and Person 21029638.
    static let captures = [
        "200107928": "jorgetroya80-object-200107928.json",
        "200117708": "kintopp-hmo-200117708-linked-art.json",
        "2001": "maksym-object-2001-linked-art.json",
        "202107928": "jorgetroya80-visual-202107928.json",
        "500711199912110510799100": "jorgetroya80-digital-500711199912110510799100.json",
        "2103429": "jorgetroya80-person-2103429.json",
    ]
    static let capturedObjects = ["200107928", "200117708", "2001"]
    static let recordsBase = "https://id.rijksmuseum.nl/"

    let root: URL
    /// Every record served, by number.
    let records: [String: Data]
    /// Every object a search can return, in the service's order (by number, as text, as the real pages are).
    let pool: [Entry]

    init(root: URL) throws {
        self.root = root
        var records: [String: Data] = [:]
        for (number, file) in Self.captures {
            records[number] = try Data(contentsOf: root.appending(path: "rijksmuseum/data-api/\(file)"))
        }
        let captured = records
        let real = try Self.capturedObjects.map { try Entry(number: $0, records: captured) }
        let standIns = try RijksmuseumStandIns(root: root, skipping: Set(real.map(\.objectNumber)))
        records.merge(standIns.records) { captured, _ in captured }
        let all = records
        let entries = try real + standIns.objects.map { try Entry(number: $0, records: all) }
        pool = entries.sorted { $0.number < $1.number }
        self.records = records
    }

    static func uri(_ number: String) -> String { recordsBase + number }

    static func number(fromURI uri: String) -> String? {
        guard uri.hasPrefix(recordsBase), uri.count > recordsBase.count else { return nil }
        return String(uri.dropFirst(recordsBase.count))
    }

    // MARK: Records

    /// A record by number; anything else is a 404 with a small body, as the real service has no such record.
    func record(number: String) throws -> (Int, Data) {
        if let record = records[number] { return (200, record) }
        let body = ["error": "not found", "id": Self.uri(number)]
        return (404, try JSONSerialization.data(withJSONObject: body, options: [.withoutEscapingSlashes]))
    }

    // MARK: Search

    /// The search service's answer to a request with these (decoded) parameters and this raw query string.
    func search(_ parameters: [String: String], rawQuery: String?) throws -> (Int, Data) {
        let query = SearchQuery(parameters)
        if let capture = query.capture {
            return (200, try Data(contentsOf: root.appending(path: "rijksmuseum/data-api/\(capture)")))
        }
        var after: String?
        if let token = query.pageToken {
            guard let number = PageToken.decode(token) else {
                return (400, Data(#"{"error":"invalid pageToken"}"#.utf8))
            }
            after = number
        }
        let hits = pool.filter(query.matches).map(\.number)
        return (200, try RijksmuseumSearchPage(numbers: hits, after: after, query: rawQuery).encoded())
    }

    /// Folding for matching: case- and diacritic-insensitive, as the real service matches "Émile" with "emile".
    static func fold(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespaces)
            .folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}

/// The filters the replay honours; an empty or unknown parameter filters nothing.
struct SearchQuery {
    var creator: String?
    var title: String?
    var objectNumber: String?
    var imageOnly: Bool
    var pageToken: String?

    init(_ parameters: [String: String]) {
        func value(_ name: String) -> String? {
            parameters[name].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        }
        creator = value("creator").map(RijksmuseumFixtures.fold)
        title = value("title").map(RijksmuseumFixtures.fold)
        objectNumber = value("objectNumber").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        imageOnly = value("imageAvailable").map(RijksmuseumFixtures.fold) == "true"
        pageToken = value("pageToken")
    }

    /// The captured page this exact query was recorded with (the creator and title in any case).
    var capture: String? {
        guard imageOnly, objectNumber == nil, pageToken == nil else { return nil }
        switch (creator, title) {
        case (nil, "zzqqxx"): return "jorgetroya80-search-empty.json"
        case ("rembrandt", "nachtwacht"): return "jorgetroya80-search-rembrandt-nachtwacht.json"
        default: return nil
        }
    }

    func matches(_ entry: RijksmuseumFixtures.Entry) -> Bool {
        (creator.map { creator in entry.makers.contains { $0.contains(creator) } } ?? true)
            && (title.map { title in entry.titles.contains { $0.contains(title) } } ?? true)
            && (objectNumber.map { $0 == entry.objectNumber } ?? true)
            && (!imageOnly || entry.hasImage)
    }
}

extension RijksmuseumFixtures.Entry {
    /// The entry for the object record `number`, read from `records` (which must hold it).
    init(number: String, records: [String: Data]) throws {
        guard let data = records[number] else { throw ReplayError.missingRecord(number) }
        let object = try FixtureCatalog.object(data)
        let production = Self.nodes(object["produced_by"]).flatMap { Self.nodes($0["part"]) }
        let identifiers = Self.nodes(object["identified_by"])
        self.number = number
        makers = production.flatMap { Self.nodes($0["carried_out_by"]) }.flatMap { Self.nodes($0["notation"]) }
            .compactMap { $0["@value"] as? String }.map(RijksmuseumFixtures.fold)
        titles = identifiers.filter { $0["type"] as? String == "Name" }
            .compactMap { $0["content"] as? String }.map(RijksmuseumFixtures.fold)
        objectNumber = (identifiers.first { $0["type"] as? String == "Identifier" }?["content"] as? String ?? "")
            .lowercased()
        hasImage = Self.hasImageChain(object, records)
    }

    /// The JSON objects of a Linked Art value: one object or an array of them (bare URI strings skipped, since the
    /// real records mix both).
    private static func nodes(_ value: Any?) -> [[String: Any]] {
        if let node = value as? [String: Any] { return [node] }
        return (value as? [Any] ?? []).compactMap { $0 as? [String: Any] }
    }

    /// Object → `shows[0]` VisualItem → `digitally_shown_by[0]` DigitalObject, every hop a record the replay has.
    private static func hasImageChain(_ object: [String: Any], _ records: [String: Data]) -> Bool {
        func next(_ node: [String: Any], _ key: String) -> [String: Any]? {
            guard let uri = nodes(node[key]).first?["id"] as? String,
                  let number = RijksmuseumFixtures.number(fromURI: uri), let data = records[number]
            else { return nil }
            return try? FixtureCatalog.object(data)
        }
        return next(object, "shows").flatMap { next($0, "digitally_shown_by") } != nil
    }
}
