import Foundation

/// Linked Art records standing in for the artworks that only the museum's retired keyed API was recorded for.
///
/// The real data services were captured for a handful of objects only, too few to search; the legacy recordings hold
/// some 140 more artworks. Each becomes a minimal HumanMadeObject in the real captures' shape (object number, title,
/// maker, place, dating: a legacy detail's, else the one the entry's `longTitle` ends with) and, when the legacy entry
/// had a showable image, a VisualItem
/// and a DigitalObject whose access point is the recorded legacy image URL as is: the replay never invents an image
/// URL, so whatever a client shows from a stand-in is something the museum really served once.
struct RijksmuseumStandIns {
    /// Every stand-in record (objects, visual items, digital objects) by number.
    private(set) var records: [String: Data] = [:]
    /// The stand-in objects' numbers, in the order of the legacy recordings.
    private(set) var objects: [String] = []
    private var numbers = StandInNumbers()

    /// Stand-ins for every legacy artwork whose object number (lower-cased) is not in `taken`: a real capture wins.
    init(root: URL, skipping taken: Set<String>) throws {
        let legacy = try LegacyRecordings(root: root)
        for artwork in legacy.artworks where !taken.contains(artwork.objectNumber.lowercased()) {
            try add(artwork, dating: legacy.datings[artwork.objectNumber] ?? artwork.listedDating)
        }
    }

    private mutating func add(_ artwork: LegacyRecordings.Artwork, dating: LegacyRecordings.Dating?) throws {
        let number = numbers.number(.object, for: artwork.objectNumber)
        var object = StandInRecord.object(number: number, artwork: artwork)
        object["produced_by"] = production(artwork, dating: dating)
        if let image = artwork.image {
            let visual = numbers.sibling(.visual, of: number), digital = numbers.sibling(.digital, of: number)
            object["shows"] = [StandInRecord.reference(visual, "VisualItem")]
            records[visual] = try StandInRecord.encode(StandInRecord.visualItem(visual, shownBy: digital))
            let digitalObject = StandInRecord.digitalObject(digital, shows: visual, image: image)
            records[digital] = try StandInRecord.encode(digitalObject)
        }
        records[number] = try StandInRecord.encode(object)
        objects.append(number)
    }

    /// `produced_by` with one part: the maker (a Person carrying its name as `notation`, so a client needs no extra
    /// GET, as with the real 200107928) and the places; the dating of the legacy detail, else the one its list entry
    /// ends its `longTitle` with.
    private mutating func production(_ artwork: LegacyRecordings.Artwork, dating: LegacyRecordings.Dating?)
        -> [String: Any]
    {
        var part: [String: Any] = ["type": "Production"]
        if let maker = artwork.maker {
            part["carried_out_by"] = [StandInRecord.named(numbers.number(.person, for: maker), "Person", maker)]
        }
        let places = artwork.places.map { StandInRecord.named(numbers.number(.place, for: $0), "Place", $0) }
        if !places.isEmpty { part["took_place_at"] = places }
        var production: [String: Any] = ["type": "Production", "part": [part]]
        if let dating { production["timespan"] = StandInRecord.timespan(dating) }
        return production
    }
}

/// Numbers for stand-in records: `9`, a digit for the kind of record, then nine digits of a 64-bit FNV-1a hash of a
/// stable key (the object number, a maker's or a place's name), so a stand-in keeps its number across runs and
/// machines. Every real number recorded starts with 2 or 5, so none collides with a stand-in; a collision between two
/// stand-ins moves on to the next free number, in the recordings' order. An object's visual item and digital object
/// reuse its nine digits under their own kind digit. Persons and places are not served (404): their names travel as
/// `notation` inside the object, which is all a client reads of them.
struct StandInNumbers {
    enum Kind: String {
        case object = "90", visual = "92", person = "93", place = "94", digital = "95"
    }

    private var assigned: [String: String] = [:]
    private var used: Set<String> = []

    mutating func number(_ kind: Kind, for key: String) -> String {
        if let number = assigned[kind.rawValue + key] { return number }
        var digits = Self.hash(key) % 1_000_000_000
        while used.contains(Self.number(kind, digits)) { digits = (digits + 1) % 1_000_000_000 }
        let number = Self.number(kind, digits)
        used.insert(number)
        assigned[kind.rawValue + key] = number
        return number
    }

    /// The record of another kind that belongs to `object`: unique because the object's digits are.
    func sibling(_ kind: Kind, of object: String) -> String {
        kind.rawValue + object.dropFirst(Kind.object.rawValue.count)
    }

    private static func number(_ kind: Kind, _ digits: UInt64) -> String {
        let text = String(digits)
        return kind.rawValue + String(repeating: "0", count: 9 - text.count) + text
    }

    /// FNV-1a, 64 bits: unlike `Hasher`, the same on every run.
    private static func hash(_ key: String) -> UInt64 {
        key.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

/// The fields of the legacy recordings a stand-in is made of.
struct LegacyRecordings {
    struct Artwork {
        var objectNumber: String
        var title: String?
        /// `principalOrFirstMaker`; nil when empty.
        var maker: String?
        /// `productionPlaces` without repeats (the recordings repeat them: `["Amsterdam", "Amsterdam"]`).
        var places: [String]
        /// `webImage.url`, only when the museum let it be shown (`showImage` not false).
        var image: String?
        /// The dating the entry's `longTitle` ends with (`title, maker, dating`: "…, Rembrandt van Rijn, 1642"), in
        /// the recording's language (its `id` starts `en-` or `nl-`), its years read from the text.
        var listedDating: Dating?
    }

    struct Dating: Decodable {
        var presentingDate: String?
        var yearEarly: Int?
        var yearLate: Int?
        /// The text is Dutch (`ca. 1665 - ca. 1669`); English or unknown otherwise.
        var isDutch: Bool?
    }

    private struct File: Decodable {
        var artObjects: [Entry]?
        var artObject: Detail?
    }

    private struct Entry: Decodable {
        var id: String?
        var objectNumber: String?
        var title: String?
        var longTitle: String?
        var principalOrFirstMaker: String?
        var showImage: Bool?
        var webImage: Image?
        var productionPlaces: [String]?
    }

    private struct Image: Decodable {
        var url: String?
    }

    private struct Detail: Decodable {
        var objectNumber: String?
        var dating: Dating?
    }

    /// Every `artObjects[]` entry with an object number, the first recording of a number winning.
    private(set) var artworks: [Artwork] = []
    /// The dating of every legacy detail recording, by object number.
    private(set) var datings: [String: Dating] = [:]

    init(root: URL) throws {
        var seen: Set<String> = []
        for path in try FixtureCatalog.files(root, "rijksmuseum/legacy") {
            let file = try JSONDecoder().decode(File.self, from: try FixtureCatalog.body(root, path))
            if let detail = file.artObject, let number = detail.objectNumber { datings[number] = detail.dating }
            for entry in file.artObjects ?? [] {
                guard let artwork = Self.artwork(entry), seen.insert(artwork.objectNumber).inserted else { continue }
                artworks.append(artwork)
            }
        }
    }

    private static func artwork(_ entry: Entry) -> Artwork? {
        guard let number = entry.objectNumber, !number.isEmpty else { return nil }
        var places: [String] = []
        for place in entry.productionPlaces ?? [] where !place.isEmpty && !places.contains(place) {
            places.append(place)
        }
        let maker = entry.principalOrFirstMaker.flatMap { $0.isEmpty ? nil : $0 }
        let image = entry.showImage == false ? nil : entry.webImage?.url.flatMap { $0.isEmpty ? nil : $0 }
        return Artwork(objectNumber: number, title: entry.title, maker: maker, places: places, image: image,
                       listedDating: dating(ofLongTitle: entry.longTitle, isDutch: entry.id?.hasPrefix("nl-") == true))
    }

    /// The last comma-separated part of a `longTitle`, when it names a year; its first and last years as the range.
    static func dating(ofLongTitle longTitle: String?, isDutch: Bool) -> Dating? {
        guard let text = longTitle?.components(separatedBy: ", ").last?.trimmingCharacters(in: .whitespaces),
              text != longTitle
        else { return nil }
        let years = text.split { !$0.isNumber }.compactMap { Int($0) }.filter { (100...2100).contains($0) }
        guard let first = years.first, let last = years.last else { return nil }
        return Dating(presentingDate: text, yearEarly: first, yearLate: last, isDutch: isDutch)
    }
}
