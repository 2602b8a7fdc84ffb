import Foundation

/// The Linked Art JSON of stand-in records: the real captures' shapes and vocabulary (Getty AAT types, the museum's
/// own "object number" type), cut down to the fields a client reads.
enum StandInRecord {
    static let context = "https://linked.art/ns/v1/linked-art.json"
    static let english = "http://vocab.getty.edu/aat/300388277"
    static let dutch = "http://vocab.getty.edu/aat/300388256"
    /// Identifier types of an object number, as in every real capture (computed: `Any` values are not `Sendable`).
    static var objectNumberTypes: [[String: Any]] {
        [
            type("http://vocab.getty.edu/aat/300312355"),
            ["id": "https://id.rijksmuseum.nl/22015218", "type": "Type",
             "notation": [["@language": "en", "@value": "object number"],
                          ["@language": "nl", "@value": "objectnummer"]]],
        ]
    }
    /// "preferred title": the Name type a client picks the display title by.
    static let preferredName = "http://vocab.getty.edu/aat/300404670"

    /// The HumanMadeObject without its production and image, which the caller adds.
    static func object(number: String, artwork: LegacyRecordings.Artwork) -> [String: Any] {
        var identifiers: [[String: Any]] = [
            ["type": "Identifier", "content": artwork.objectNumber, "classified_as": objectNumberTypes],
        ]
        if let title = artwork.title, !title.isEmpty {
            identifiers.append(["type": "Name", "content": title, "classified_as": [type(preferredName)],
                                "language": [["id": english, "type": "Language"]]])
        }
        return [
            "@context": context, "id": RijksmuseumFixtures.uri(number), "type": "HumanMadeObject",
            // Linked Art's label for people reading the JSON: says where this record came from.
            "_label": "Replay stand-in for \(artwork.objectNumber), built from a legacy API recording",
            "identified_by": identifiers,
        ]
    }

    static func visualItem(_ number: String, shownBy digital: String) -> [String: Any] {
        ["@context": context, "id": RijksmuseumFixtures.uri(number), "type": "VisualItem",
         "digitally_shown_by": [reference(digital, "DigitalObject")]]
    }

    /// The image itself: `access_point[0].id` is the recorded legacy image URL.
    static func digitalObject(_ number: String, shows visual: String, image: String) -> [String: Any] {
        ["@context": context, "id": RijksmuseumFixtures.uri(number), "type": "DigitalObject",
         "access_point": [["id": image, "type": "DigitalObject"]],
         "digitally_shows": [reference(visual, "VisualItem")]]
    }

    /// A Person or Place carrying its English name as `notation`, as the real objects' makers and places do.
    static func named(_ number: String, _ type: String, _ name: String) -> [String: Any] {
        ["id": RijksmuseumFixtures.uri(number), "type": type, "notation": [["@language": "en", "@value": name]]]
    }

    static func reference(_ number: String, _ type: String) -> [String: Any] {
        ["id": RijksmuseumFixtures.uri(number), "type": type]
    }

    /// The legacy `dating` as a Linked Art TimeSpan: the display text, in the recording's language, plus the machine
    /// range over whole years.
    static func timespan(_ dating: LegacyRecordings.Dating) -> [String: Any] {
        var timespan: [String: Any] = ["type": "TimeSpan"]
        if let text = dating.presentingDate, !text.isEmpty {
            let language = dating.isDutch == true ? dutch : english
            timespan["identified_by"] = [["type": "Name", "content": text,
                                          "language": [["id": language, "type": "Language"]]]]
        }
        if let year = dating.yearEarly { timespan["begin_of_the_begin"] = "\(year)-01-01T00:00:00Z" }
        if let year = dating.yearLate { timespan["end_of_the_end"] = "\(year)-12-31T23:59:59Z" }
        return timespan
    }

    static func type(_ id: String) -> [String: Any] {
        ["id": id, "type": "Type"]
    }

    static func encode(_ record: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: record,
                                   options: [.prettyPrinted, .withoutEscapingSlashes])
    }
}
