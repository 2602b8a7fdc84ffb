import Foundation

/// Pure decoders of the Rijksmuseum's Linked Art (JSON-LD) records and search pages. No I/O.
///
/// The data services answer with a graph: a search page lists record URIs only, and an object names its maker, image
/// and web page as further records. These decoders pick out what the proxy shows and the record numbers it has to
/// fetch next; following them is the caller's business.
enum LinkedArt {
    /// `https://id.rijksmuseum.nl/200107928` → "200107928". Only that host (http or https), and only a path of
    /// digits: anything else is nil (the proxy never follows a URI the record names on another host).
    static func recordNumber(fromURI uri: String) -> String? {
        for prefix in ["https://id.rijksmuseum.nl/", "http://id.rijksmuseum.nl/"] where uri.hasPrefix(prefix) {
            let number = uri.dropFirst(prefix.count)
            let isDigits = !number.isEmpty
                && number.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            return isDigits ? String(number) : nil
        }
        return nil
    }

    struct SearchPage: Sendable, Equatable {
        var totalItems: Int?
        var recordNumbers: [String]
        /// Opaque to us (base64 in the recorded pages): it only goes back upstream as the `pageToken` query value.
        var nextPageToken: String?
    }

    static func searchPage(_ body: Data) throws -> SearchPage {
        let page = try record(body, ofType: ["OrderedCollectionPage"])
        // An empty result still has `orderedItems: []`: a page without it is not one.
        guard page.relations[.orderedItems] != nil else { throw Malformed(reason: "a search page without orderedItems") }
        let nextQuery = page.at(.next).first?.id.flatMap { URLComponents(string: $0)?.queryItems } ?? []
        let token = nextQuery.first { $0.name == "pageToken" }?.value
        return SearchPage(
            totalItems: page.at(.partOf).first?.totalItems,
            recordNumbers: page.at(.orderedItems).compactMap(\.recordNumber),
            nextPageToken: token?.isEmpty == false ? token : nil
        )
    }

    struct ObjectRecord: Sendable, Equatable {
        var recordNumber: String
        var objectNumber: String?
        var englishTitle: String?
        var dutchTitle: String?
        var maker: String?
        /// Set only when no production part names its maker: then the Person record has to be fetched for a name.
        var makerRecordNumber: String?
        var englishDating: String?
        var dutchDating: String?
        var yearEarly: Int?
        var yearLate: Int?
        var productionPlaces: [String]
        /// The text about the object, paragraph breaks kept: the plaque (`subject_of[]` in that language →
        /// `part[]` classified aat:300048722), else the description (`referred_to_by[]` in that language, classified
        /// aat:300435452; the one also classified "preferred" first).
        var englishDescription: String?
        var dutchDescription: String?
        var webPage: String?
        var visualItemNumber: String?
    }

    static func object(_ body: Data) throws -> ObjectRecord {
        let object = try record(body, ofType: ["HumanMadeObject"])
        guard let number = object.recordNumber else {
            throw Malformed(reason: "a HumanMadeObject without a Rijksmuseum record id")
        }
        let makers = object.at(.producedBy, .part, .carriedOutBy)
        let maker = makers.lazy.compactMap { label($0.notation) }.first
        let attributedMakers = object.at(.producedBy, .part, .assignedBy)
            .filter { $0.assignedProperty == "carried_out_by" }.flatMap { $0.at(.assigned) }
        let titles = object.at(.identifiedBy)
            .filter { $0.hasType("Name") && !$0.isClassified(as: Vocabulary.formerTitle) }
        let timespan = object.at(.producedBy, .timespan).first
        let datings = timespan?.at(.identifiedBy) ?? []
        return ObjectRecord(
            recordNumber: number,
            objectNumber: firstText(of: object.at(.identifiedBy), matching: {
                $0.hasType("Identifier") && $0.isClassified(as: Vocabulary.objectNumber)
            }),
            englishTitle: title(in: Vocabulary.english, among: titles),
            dutchTitle: title(in: Vocabulary.dutch, among: titles),
            maker: maker,
            makerRecordNumber: maker == nil ? (makers + attributedMakers).lazy.compactMap(\.recordNumber).first : nil,
            englishDating: firstText(of: datings, matching: { $0.isIn(Vocabulary.english) }),
            dutchDating: firstText(of: datings, matching: { $0.isIn(Vocabulary.dutch) }),
            yearEarly: year(timespan?.beginOfTheBegin),
            yearLate: year(timespan?.endOfTheEnd),
            productionPlaces: unique(object.at(.producedBy, .part, .tookPlaceAt).compactMap { label($0.notation) }),
            englishDescription: description(of: object, in: Vocabulary.english),
            dutchDescription: description(of: object, in: Vocabulary.dutch),
            webPage: object.at(.subjectOf, .digitallyCarriedBy, .accessPoint).lazy.compactMap { httpsURL($0.id) }.first,
            visualItemNumber: object.at(.shows).lazy.compactMap(\.recordNumber).first
        )
    }

    /// The object's text in `language`: its plaque, else its description (see ``ObjectRecord/englishDescription``).
    private static func description(of object: Node, in language: String) -> String? {
        let plaques = object.at(.subjectOf).filter { $0.isIn(language) }.flatMap { $0.at(.part) }
            .filter { $0.isClassified(as: Vocabulary.plaqueText) }
        let descriptions = object.at(.referredToBy)
            .filter { $0.isIn(language) && $0.isClassified(as: Vocabulary.description) }
        let preferredFirst = descriptions.filter { $0.isClassified(as: Vocabulary.preferredTerm) }
            + descriptions.filter { !$0.isClassified(as: Vocabulary.preferredTerm) }
        return (plaques + preferredFirst).lazy.compactMap { paragraphs($0.content) }.first
    }

    /// A dating from the machine range alone, for a timespan without a Name: "1642", or "1628 - 1629".
    static func dating(fromYear early: Int?, to late: Int?) -> String? {
        guard let early else { return late.map(String.init) }
        guard let late, late != early else { return String(early) }
        return "\(early) - \(late)"
    }

    /// The record number of the DigitalObject a VisualItem is shown by (digitally_shown_by[0].id), nil when it has
    /// none on the museum's id host.
    static func visualItem(_ body: Data) throws -> String? {
        try record(body, ofType: ["VisualItem"]).at(.digitallyShownBy).lazy.compactMap(\.recordNumber).first
    }

    /// The image URL of a DigitalObject (access_point[0].id, https only), nil when it has none.
    static func digitalObject(_ body: Data) throws -> String? {
        try record(body, ofType: ["DigitalObject"]).at(.accessPoint).lazy.compactMap { httpsURL($0.id) }.first
    }

    /// A Person's display name: the English preferred Name, else an English display-form Name, else a Dutch one of
    /// those. The inverted "Rijn, Rembrandt van" form reads wrong on a card, so it comes only when nothing else does.
    /// Linked Art records workshops and studios as a Group, which the maker slot can name as well.
    static func person(_ body: Data) throws -> String? {
        let names = try record(body, ofType: ["Person", "Group"]).at(.identifiedBy).filter { $0.hasType("Name") }
        func name(in language: String, classifiedAs kind: String) -> (Node) -> Bool {
            { $0.isIn(language) && $0.isClassified(as: kind) }
        }
        return firstText(
            of: names,
            matching: name(in: Vocabulary.english, classifiedAs: Vocabulary.preferredTerm),
            name(in: Vocabulary.english, classifiedAs: Vocabulary.displayName),
            name(in: Vocabulary.dutch, classifiedAs: Vocabulary.preferredTerm),
            name(in: Vocabulary.dutch, classifiedAs: Vocabulary.displayName),
            { !$0.isClassified(as: Vocabulary.invertedName) },
            { _ in true }
        )
    }

    /// Thrown when a body is not JSON or not the record type expected (e.g. `type` is not HumanMadeObject for
    /// object()).
    struct Malformed: Error, Equatable {
        var reason: String
    }

    /// The concepts the decoders select by, spelled as the museum writes them (Getty ids under http).
    private enum Vocabulary {
        static let english = "http://vocab.getty.edu/aat/300388277"
        static let dutch = "http://vocab.getty.edu/aat/300388256"
        static let preferredTerm = "http://vocab.getty.edu/aat/300404670"
        static let displayName = "http://vocab.getty.edu/aat/300404671"
        static let invertedName = "http://vocab.getty.edu/aat/300404672"
        static let objectNumber = "http://vocab.getty.edu/aat/300312355"
        static let plaqueText = "http://vocab.getty.edu/aat/300048722"
        /// "description": the museum's own text about the object, in `referred_to_by`.
        static let description = "http://vocab.getty.edu/aat/300435452"
        static let formerTitle = "https://id.rijksmuseum.nl/22015528"

        /// Getty serves the same ids under https too; one spelling lets them compare equal.
        static func canonical(_ uri: String) -> String {
            let secureGetty = "https://vocab.getty.edu/"
            return uri.hasPrefix(secureGetty) ? "http://vocab.getty.edu/" + uri.dropFirst(secureGetty.count) : uri
        }
    }

    /// One node of the graph, read leniently: an entry may be a bare URI or an object, and a field that is missing or
    /// of an unexpected shape is simply absent.
    private struct Node: Decodable {
        enum Field: String, CodingKey {
            case id, type, content, notation, totalItems, assignedProperty = "assigned_property"
            case beginOfTheBegin = "begin_of_the_begin", endOfTheEnd = "end_of_the_end"
        }

        /// The links the decoders follow, each a list, as JSON-LD may write a one-element list as the bare element.
        enum Relation: String, CodingKey {
            case classifiedAs = "classified_as", identifiedBy = "identified_by", producedBy = "produced_by"
            case carriedOutBy = "carried_out_by", tookPlaceAt = "took_place_at", assignedBy = "assigned_by"
            case subjectOf = "subject_of", digitallyCarriedBy = "digitally_carried_by", accessPoint = "access_point"
            case digitallyShownBy = "digitally_shown_by", referredToBy = "referred_to_by"
            case language, part, timespan, assigned, shows
            case partOf, next, orderedItems
        }

        var id: String?
        var type: [String] = []
        var content: String?
        var notation: [Literal] = []
        var totalItems: Int?
        var assignedProperty: String?
        var beginOfTheBegin: String?
        var endOfTheEnd: String?
        var relations: [Relation: [Node]] = [:]

        init(from decoder: any Decoder) throws {
            if let uri = try? decoder.singleValueContainer().decode(String.self) {
                id = uri
                return
            }
            if let fields = try? decoder.container(keyedBy: Field.self) {
                (id, content, totalItems) = (Self.value(.id, in: fields), Self.value(.content, in: fields),
                                             Self.value(.totalItems, in: fields))
                (type, notation) = (Self.list(.type, in: fields), Self.list(.notation, in: fields))
                assignedProperty = Self.value(.assignedProperty, in: fields)
                beginOfTheBegin = Self.value(.beginOfTheBegin, in: fields)
                endOfTheEnd = Self.value(.endOfTheEnd, in: fields)
            }
            if let links = try? decoder.container(keyedBy: Relation.self) {
                for relation in links.allKeys { relations[relation] = Self.list(relation, in: links) }
            }
        }

        /// The nodes at the end of a path of relations: `at(.producedBy, .part, .carriedOutBy)`.
        func at(_ path: Relation...) -> [Node] {
            path.reduce([self]) { nodes, relation in nodes.flatMap { $0.relations[relation] ?? [] } }
        }

        var recordNumber: String? { id.flatMap(LinkedArt.recordNumber(fromURI:)) }
        func hasType(_ name: String) -> Bool { type.contains(name) }
        func isClassified(as concept: String) -> Bool { at(.classifiedAs).contains { $0.refers(to: concept) } }
        func isIn(_ language: String) -> Bool { at(.language).contains { $0.refers(to: language) } }
        private func refers(to concept: String) -> Bool { id.map(Vocabulary.canonical) == concept }

        private static func value<Key: CodingKey, Value: Decodable>(
            _ key: Key, in container: KeyedDecodingContainer<Key>
        ) -> Value? {
            (try? container.decodeIfPresent(Value.self, forKey: key)) ?? nil
        }

        private static func list<Key: CodingKey, Element: Decodable>(
            _ key: Key, in container: KeyedDecodingContainer<Key>
        ) -> [Element] {
            if let many: [Element] = value(key, in: container) { return many }
            return value(key, in: container).map { [$0] } ?? []
        }
    }

    /// A language-tagged string, `{"@language": "en", "@value": "…"}`; a plain string counts as untagged.
    private struct Literal: Decodable {
        var language: String?
        var value: String?

        enum CodingKeys: String, CodingKey {
            case language = "@language", value = "@value"
        }

        init(from decoder: any Decoder) throws {
            if let plain = try? decoder.singleValueContainer().decode(String.self) {
                value = plain
                return
            }
            let fields = try? decoder.container(keyedBy: CodingKeys.self)
            language = (try? fields?.decodeIfPresent(String.self, forKey: .language)) ?? nil
            value = (try? fields?.decodeIfPresent(String.self, forKey: .value)) ?? nil
        }
    }

    /// The body's top node, refused unless its `type` is one expected: another kind of record never passes as this one.
    private static func record(_ body: Data, ofType expected: Set<String>) throws -> Node {
        guard let node = try? JSONDecoder().decode(Node.self, from: body) else {
            throw Malformed(reason: "the body is not JSON")
        }
        guard node.type.contains(where: expected.contains) else {
            let found = node.type.isEmpty ? "no type" : node.type.joined(separator: ", ")
            throw Malformed(reason: "expected \(expected.sorted().joined(separator: " or ")), found \(found)")
        }
        return node
    }

    /// A preferred Name in that language, else any Name in it (former titles are filtered out before).
    private static func title(in language: String, among names: [Node]) -> String? {
        firstText(
            of: names,
            matching: { $0.isIn(language) && $0.isClassified(as: Vocabulary.preferredTerm) }, { $0.isIn(language) }
        )
    }

    /// The content of the first node the first choice accepts, else of the first the second accepts, and so on.
    private static func firstText(of nodes: [Node], matching choices: (Node) -> Bool...) -> String? {
        choices.lazy.compactMap { choice in nodes.lazy.filter(choice).compactMap { collapsed($0.content) }.first }.first
    }

    /// A label in English, else Dutch, else in whatever language the record gives.
    private static func label(_ notation: [Literal]) -> String? {
        func tagged(_ tag: String) -> [Literal] { notation.filter { $0.language?.lowercased() == tag } }
        return (tagged("en") + tagged("nl") + notation).lazy.compactMap { collapsed($0.value) }.first
    }

    /// Whitespace runs, line breaks included, become one space; nothing left is nil.
    private static func collapsed(_ text: String?) -> String? {
        guard let words = text?.split(whereSeparator: \.isWhitespace), !words.isEmpty else { return nil }
        return words.joined(separator: " ")
    }

    /// Like `collapsed`, but line breaks stay (as "\n", at most one blank line in a row) so paragraphs survive.
    private static func paragraphs(_ text: String?) -> String? {
        guard let text else { return nil }
        var lines: [String] = []
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let tidy = collapsed(String(line)) ?? ""
            if !tidy.isEmpty || lines.last?.isEmpty == false { lines.append(tidy) }
        }
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }

    /// Only https links reach the app, whatever the record names.
    private static func httpsURL(_ text: String?) -> String? {
        guard let text, let url = URLComponents(string: text), url.scheme?.lowercased() == "https",
              url.host?.isEmpty == false
        else { return nil }
        return text
    }

    /// The year of an ISO 8601 timestamp ("1642-01-01T00:00:00Z" → 1642), its sign kept for years before year 1.
    private static func year(_ timestamp: String?) -> Int? {
        guard let timestamp else { return nil }
        let isNegative = timestamp.hasPrefix("-")
        let digits = timestamp.dropFirst(isNegative ? 1 : 0).prefix { $0.isASCII && $0.isNumber }
        guard let year = Int(digits) else { return nil }
        return isNegative ? -year : year
    }

    private static func unique(_ texts: [String]) -> [String] {
        var seen = Set<String>()
        return texts.filter { seen.insert($0).inserted }
    }
}
