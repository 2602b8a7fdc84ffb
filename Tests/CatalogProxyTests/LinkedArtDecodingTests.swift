@testable import CatalogProxy
import Contracts
import Foundation
import Testing

/// The Rijksmuseum data services (Linked Art) through `LinkedArt`: every recorded body, plus small synthetic ones for
/// the shapes no recording has.
@Suite struct LinkedArtDecodingTests {
    private func fixture(_ name: String) throws -> Data {
        try Fixtures.body("rijksmuseum/data-api/\(name).json")
    }

    private func object(_ json: String) throws -> LinkedArt.ObjectRecord {
        try LinkedArt.object(Data(json.utf8))
    }

    @Test func everyRecordedBodyDecodesThroughItsDecoder() throws {
        let files = try Fixtures.files(in: "rijksmuseum/data-api")
        #expect(files.count >= 11)
        for file in files {
            let body = try Fixtures.body(file)
            if file.contains("search") {
                let page = try LinkedArt.searchPage(body)
                let total = try #require(page.totalItems, "\(file)")
                #expect(page.recordNumbers.count <= min(total, 100), "\(file)")
            } else if file.contains("object") || file.contains("hmo") {
                let record = try LinkedArt.object(body)
                #expect(record.objectNumber != nil, "\(file)")
                #expect(record.englishTitle ?? record.dutchTitle != nil, "\(file)")
                #expect(record.maker ?? record.makerRecordNumber != nil, "\(file)")
                #expect(record.visualItemNumber != nil, "\(file)")
            } else if file.contains("person") {
                #expect(try LinkedArt.person(body) != nil, "\(file)")
            } else if file.contains("visual") {
                #expect(try LinkedArt.visualItem(body) != nil, "\(file)")
            } else if file.contains("digital") {
                #expect(try LinkedArt.digitalObject(body)?.hasPrefix("https://") == true, "\(file)")
            } else {
                Issue.record("no decoder chosen for \(file)")
            }
        }
    }

    @Test func aCreatorSearchPageHasTheCountTheIDsAndTheNextToken() throws {
        let page = try LinkedArt.searchPage(fixture("jorgetroya80-search-rembrandt-page1"))
        #expect(page.totalItems == 1447)
        #expect(page.recordNumbers.count == 100)
        #expect(page.recordNumbers.first == "200106038")
        #expect(page.recordNumbers.last == "200124636")
        #expect(page.nextPageToken == "eyJ0b2tlbiI6ICJodHRwczovL2lkLnJpamtzbXVzZXVtLm5sLzIwMDEyNDYzNiJ9")
    }

    @Test func aSingleHitIsTheLastPage() throws {
        let page = try LinkedArt.searchPage(fixture("jorgetroya80-search-rembrandt-nachtwacht"))
        #expect(page == LinkedArt.SearchPage(totalItems: 1, recordNumbers: ["200107928"], nextPageToken: nil))
    }

    @Test func anEmptySearchHasNoHitsAndNoNext() throws {
        let page = try LinkedArt.searchPage(fixture("jorgetroya80-search-empty"))
        #expect(page == LinkedArt.SearchPage(totalItems: 0, recordNumbers: [], nextPageToken: nil))
    }

    @Test func theWholeCollectionPages() throws {
        let page = try LinkedArt.searchPage(fixture("maksym-search-collection"))
        #expect(page.totalItems == 838_147)
        #expect(page.recordNumbers.count == 100)
        #expect(page.nextPageToken == "eyJ0b2tlbiI6ICJodHRwczovL2lkLnJpamtzbXVzZXVtLm5sLzIwMDEwMDA4OCJ9")
    }

    @Test func aSearchPageDropsIDsItCannotFollowAndDecodesTheToken() throws {
        let page = try LinkedArt.searchPage(Data(#"""
            {"type": "OrderedCollectionPage", "partOf": {"totalItems": 4},
             "next": {"id": "https://data.rijksmuseum.nl/search/collection?title=x&pageToken=ab%2Bc%3D%3D"},
             "orderedItems": ["https://id.rijksmuseum.nl/5", {"id": "https://example.org/6"}, {"id": "_:b1"},
                              {"id": "http://id.rijksmuseum.nl/7", "type": "HumanMadeObject"}]}
            """#.utf8))
        #expect(page == LinkedArt.SearchPage(totalItems: 4, recordNumbers: ["5", "7"], nextPageToken: "ab+c=="))
    }

    @Test func theNightWatch() throws {
        var record = try LinkedArt.object(fixture("jorgetroya80-object-200107928"))
        let description = try #require(record.englishDescription)
        #expect(description.hasPrefix("Rembrandt’s largest, most famous canvas was made for the Arquebusiers"))
        #expect(description.hasSuffix("She was the company mascot."))
        // The Dutch plaque wins over the two Dutch descriptions in `referred_to_by`.
        #expect(record.dutchDescription?.hasPrefix("Rembrandts beroemdste en grootste doek") == true)
        record.englishDescription = nil
        record.dutchDescription = nil
        #expect(record == LinkedArt.ObjectRecord(
            recordNumber: "200107928", objectNumber: "SK-C-5",
            englishTitle:
                "The Night Watch Militia Company of District II under the Command of Captain Frans Banninck Cocq",
            dutchTitle: "De Nachtwacht", maker: "Rembrandt van Rijn", makerRecordNumber: nil,
            englishDating: "1642", dutchDating: "1642", yearEarly: 1642, yearLate: 1642,
            productionPlaces: ["Amsterdam"], englishDescription: nil,
            webPage: "https://www.rijksmuseum.nl/nl/collectie/object/SK-C-5--3137deb45cd7765f9a76084a16c99544",
            visualItemNumber: "202107928"
        ))
    }

    @Test func aDrawingWithoutAPlaqueText() throws {
        let record = try LinkedArt.object(fixture("kintopp-hmo-200117708-linked-art"))
        #expect(record == LinkedArt.ObjectRecord(
            recordNumber: "200117708", objectNumber: "RP-T-1930-54(V)", englishTitle: "Three Scribes",
            dutchTitle: "Drie schriftgeleerden onder een gordijn", maker: "Rembrandt van Rijn", makerRecordNumber: nil,
            englishDating: "c. 1628 - c. 1629", dutchDating: "ca. 1628 - ca. 1629", yearEarly: 1628, yearLate: 1629,
            productionPlaces: ["Leiden"], englishDescription: nil,
            webPage: "https://www.rijksmuseum.nl/nl/collectie/object/RP-T-1930-54(V)--fd59b34d66487dc82649b7c76502ad4b",
            visualItemNumber: "202117708"
        ))
    }

    @Test func aPrintWithADutchTitleOnlyNamesItsMakerByRecord() throws {
        let record = try LinkedArt.object(fixture("maksym-object-2001-linked-art"))
        #expect(record == LinkedArt.ObjectRecord(
            recordNumber: "2001", objectNumber: "RP-P-2010-222-3315", englishTitle: nil,
            dutchTitle: "Before, Behind, Between, Above, Below", maker: nil, makerRecordNumber: "21029638",
            englishDating: "1973", dutchDating: "1973", yearEarly: 1973, yearLate: 1973, productionPlaces: [],
            englishDescription: nil,
            // No English text at all; the Dutch description is in `referred_to_by`.
            dutchDescription: "Links naast de vrouw staat een paal waaraan een opgespannen doek met blote billen erop"
                + " hangt. De vrouw leunt op een blok met de titel.",
            webPage:
                "https://www.rijksmuseum.nl/nl/collectie/object/RP-P-2010-222-3315--ba97e0d4396e589a312631ff4fbfd5fb",
            visualItemNumber: "2021"
        ))
    }

    /// What each object captured from the museum's Linked Art service gives a detail screen, and where: the most
    /// its record allows (docs/api.md states the share). 200117708's texts are its technique, dimensions, credit line
    /// and provenance, in both languages: it has no description to give.
    @Test(arguments: [
        ("jorgetroya80-object-200107928", "en", "Rembrandt’s largest", "1642"),
        ("kintopp-hmo-200117708-linked-art", nil, nil, "c. 1628 - c. 1629"),
        ("maksym-object-2001-linked-art", "nl", "Links naast de vrouw", "1973"),
    ] as [(String, String?, String?, String)])
    func eachCapturedObjectGivesItsDescriptionAndDating(file: String, language: String?, opening: String?,
                                                        dating: String) throws {
        let record = try LinkedArt.object(fixture(file))
        let item = RijksmuseumSource().item(record, number: try #require(record.objectNumber), maker: record.maker,
                                            image: nil)
        #expect(item.artwork?.plaqueLanguage == language)
        #expect(item.artwork?.plaqueDescription?.hasPrefix(opening ?? "") ?? (opening == nil))
        #expect(item.artwork?.dating == dating)
        #expect(item.artwork?.year != nil)
    }

    @Test func aTimespanWithoutANameIsDatedByItsYears() throws {
        let record = try object(#"""
            {"id": "https://id.rijksmuseum.nl/1", "type": "HumanMadeObject",
             "produced_by": {"timespan": {"begin_of_the_begin": "1628-01-01T00:00:00Z",
                                          "end_of_the_end": "1629-12-31T23:59:59Z"}},
             "referred_to_by": [{"type": "LinguisticObject", "content": "Een tekening.",
                                 "classified_as": ["http://vocab.getty.edu/aat/300435452"],
                                 "language": ["http://vocab.getty.edu/aat/300388256"]},
                                {"type": "LinguisticObject", "content": "A drawing.",
                                 "classified_as": ["http://vocab.getty.edu/aat/300435452"],
                                 "language": ["http://vocab.getty.edu/aat/300388277"]}]}
            """#)
        #expect(record.englishDating == nil && record.dutchDating == nil)
        let item = RijksmuseumSource().item(record, number: "RP-T-1", maker: nil, image: nil)
        #expect(item.artwork?.dating == "1628 - 1629" && item.artwork?.year == 1628)
        #expect(item.artwork?.plaqueDescription == "A drawing." && item.artwork?.plaqueLanguage == "en")
        #expect(LinkedArt.dating(fromYear: 1642, to: 1642) == "1642")
        #expect(LinkedArt.dating(fromYear: nil, to: nil) == nil)
    }

    @Test func aPersonIsNamedByTheEnglishPreferredForm() throws {
        #expect(try LinkedArt.person(fixture("jorgetroya80-person-2103429")) == "Rembrandt van Rijn")
    }

    @Test func aPersonFallsBackToEnglishDisplayThenDutchThenTheInvertedForm() throws {
        let (english, dutch) = ("300388277", "300388256")
        let (preferred, display, inverted) = ("300404670", "300404671", "300404672")
        func person(_ names: (content: String, kind: String, language: String)...) throws -> String? {
            let aat = "http://vocab.getty.edu/aat/"
            let entries = names.map { name in
                #"{"type": "Name", "content": "\#(name.content)", "classified_as": ["\#(aat + name.kind)"], "#
                    + #""language": ["\#(aat + name.language)"]}"#
            }
            let body = #"{"type": "Person", "identified_by": [\#(entries.joined(separator: ","))]}"#
            return try LinkedArt.person(Data(body.utf8))
        }
        let invertedName = (content: "Rijn, R.", kind: inverted, language: english)
        #expect(try person(invertedName, ("R. nl", preferred, dutch), ("R. en", display, english)) == "R. en")
        #expect(try person(invertedName, ("R. display", display, dutch), ("R. preferred", preferred, dutch))
            == "R. preferred")
        #expect(try person(invertedName, ("R. nl", display, dutch)) == "R. nl")
        #expect(try person(invertedName) == "Rijn, R.")
        #expect(try person() == nil)
    }

    @Test(arguments: ["jorgetroya80-visual-202107928", "maksym-visualitem-202107928"])
    func aVisualItemLeadsToItsDigitalObject(file: String) throws {
        #expect(try LinkedArt.visualItem(fixture(file)) == "500711199912110510799100")
    }

    @Test func aDigitalObjectGivesTheIIIFImage() throws {
        let image = try LinkedArt.digitalObject(fixture("jorgetroya80-digital-500711199912110510799100"))
        #expect(image == "https://iiif.micr.io/PJEZO/full/max/0/default.jpg")
    }

    @Test func missingLinksInTheImageChainAreNil() throws {
        #expect(try LinkedArt.visualItem(Data(#"{"type": "VisualItem"}"#.utf8)) == nil)
        #expect(try LinkedArt.digitalObject(Data(#"{"type": "DigitalObject", "access_point": []}"#.utf8)) == nil)
    }

    @Test(arguments: [
        ("https://id.rijksmuseum.nl/200107928", "200107928"), ("http://id.rijksmuseum.nl/2001", "2001"),
    ])
    func aRecordNumberComesFromTheMuseumsIDHost(uri: String, number: String) {
        #expect(LinkedArt.recordNumber(fromURI: uri) == number)
    }

    @Test(arguments: [
        "https://example.org/200107928", "https://data.rijksmuseum.nl/200107928", "https://id.rijksmuseum.nl/",
        "https://id.rijksmuseum.nl/SK-C-5", "https://id.rijksmuseum.nl/2001/", "https://id.rijksmuseum.nl/2001?x=1",
        "https://id.rijksmuseum.nl/2001#top", "https://id.rijksmuseum.nl/20 01", "https://id.rijksmuseum.nl/٢٠٠١",
        "_:b1", "https://id.rijksmuseum.nl.evil.com/1", "https://user@id.rijksmuseum.nl/1",
        "ftp://id.rijksmuseum.nl/1", "id.rijksmuseum.nl/1", "",
    ])
    func aRecordNumberIsRefusedForAnythingElse(uri: String) {
        #expect(LinkedArt.recordNumber(fromURI: uri) == nil)
    }

    @Test(arguments: [
        "not json", "", "[]", "null", #"{"id": "https://id.rijksmuseum.nl/1"}"#,
        #"{"id": "https://id.rijksmuseum.nl/1", "type": "Person"}"#,
        #"{"id": "https://example.org/1", "type": "HumanMadeObject"}"#,
    ])
    func aBodyThatIsNoObjectRecordThrows(body: String) {
        #expect(throws: LinkedArt.Malformed.self) { try LinkedArt.object(Data(body.utf8)) }
    }

    @Test func everyDecoderChecksTheRecordType() throws {
        let digitalObject = try fixture("jorgetroya80-digital-500711199912110510799100")
        let humanMadeObject = try fixture("jorgetroya80-object-200107928")
        #expect(throws: LinkedArt.Malformed.self) { try LinkedArt.searchPage(digitalObject) }
        #expect(throws: LinkedArt.Malformed.self) { try LinkedArt.visualItem(digitalObject) }
        #expect(throws: LinkedArt.Malformed.self) { try LinkedArt.person(humanMadeObject) }
        #expect(throws: LinkedArt.Malformed.self) { try LinkedArt.digitalObject(humanMadeObject) }
    }

    @Test func bareURIsObjectsSingleValuesAndTypeArraysMixFreely() throws {
        let record = try object(#"""
            {"id": "https://id.rijksmuseum.nl/42", "type": ["HumanMadeObject", "crm:E22_Human-Made_Object"],
             "identified_by": [
               {"type": "Identifier", "content": "SK-A-1", "classified_as": ["http://vocab.getty.edu/aat/300312355"]},
               {"id": "_:b1", "type": "Name", "content": "Een titel",
                "classified_as": ["https://vocab.getty.edu/aat/300404670"],
                "language": ["http://vocab.getty.edu/aat/300388256"]},
               {"type": "Name", "content": "A title", "classified_as": [{"id": "http://vocab.getty.edu/aat/300404670"}],
                "language": {"id": "https://vocab.getty.edu/aat/300388277", "type": "Language"}},
               "https://id.rijksmuseum.nl/999", 42, null],
             "produced_by": {"type": "Production",
               "timespan": {"begin_of_the_begin": "-0050-01-01T00:00:00Z", "end_of_the_end": "0100"},
               "part": [{"carried_out_by": ["https://id.rijksmuseum.nl/7"],
                         "took_place_at": [{"notation": "Delft"},
                                           {"notation": {"@language": "nl", "@value": "Delft"}}]}]},
             "shows": "https://id.rijksmuseum.nl/2042"}
            """#)
        #expect(record.objectNumber == "SK-A-1")
        #expect(record.englishTitle == "A title")
        #expect(record.dutchTitle == "Een titel")
        #expect(record.maker == nil)
        #expect(record.makerRecordNumber == "7")
        #expect(record.productionPlaces == ["Delft"])
        #expect(record.yearEarly == -50)
        #expect(record.yearLate == 100)
        #expect(record.visualItemNumber == "2042")
    }

    @Test func labelsPreferEnglishThenDutchThenAnyAndPlacesAreUnique() throws {
        let record = try object(#"""
            {"id": "https://id.rijksmuseum.nl/1", "type": "HumanMadeObject", "produced_by": {"part": [
              {"carried_out_by": [{"id": "https://id.rijksmuseum.nl/2", "notation": [
                  {"@language": "nl", "@value": "Meester"}, {"@language": "EN", "@value": "Master"}]}],
               "took_place_at": [
                  {"notation": [{"@language": "fr", "@value": "La Haye"}, {"@language": "nl", "@value": "Den Haag"}]},
                  {"notation": [{"@language": "fr", "@value": "Paris"}]}]},
              {"took_place_at": [{"notation": [{"@language": "nl", "@value": "Den Haag"}]}]}]}}
            """#)
        #expect(record.maker == "Master")
        #expect(record.makerRecordNumber == nil)
        #expect(record.productionPlaces == ["Den Haag", "Paris"])
    }

    @Test func aFormerTitleIsNeverShown() throws {
        let record = try object(#"""
            {"id": "https://id.rijksmuseum.nl/1", "type": "HumanMadeObject",
             "identified_by": [{"type": "Name", "content": "Old title",
                                "classified_as": ["https://id.rijksmuseum.nl/22015528"],
                                "language": ["http://vocab.getty.edu/aat/300388277"]}]}
            """#)
        #expect(record.englishTitle == nil)
    }

    @Test func anObjectWithoutShowsHasNoVisualItem() throws {
        let record = try object(#"{"id": "https://id.rijksmuseum.nl/1", "type": "HumanMadeObject"}"#)
        #expect(record.visualItemNumber == nil)
        #expect(record.objectNumber == nil && record.englishTitle == nil && record.dutchTitle == nil)
        #expect(record.maker == nil && record.makerRecordNumber == nil && record.productionPlaces.isEmpty)
    }

    @Test func textsAreTidiedAndPlaqueParagraphsKept() throws {
        let record = try object(#"""
            {"id": "https://id.rijksmuseum.nl/1", "type": "HumanMadeObject",
             "identified_by": [{"type": "Name", "content": "  De \t ‘Nachtwacht’\n ",
                                "language": ["http://vocab.getty.edu/aat/300388256"]}],
             "subject_of": [{"type": "LinguisticObject", "language": [{"id": "http://vocab.getty.edu/aat/300388277"}],
                             "part": [{"classified_as": ["http://vocab.getty.edu/aat/300048722"],
                                       "content": "\r\n First   paragraph.\r\n\r\n\r\nThe captain’s  hand. \r\n"}]}]}
            """#)
        #expect(record.dutchTitle == "De ‘Nachtwacht’")
        #expect(record.englishDescription == "First paragraph.\n\nThe captain’s hand.")
    }

    @Test func onlyHTTPSLinksAreKept() throws {
        let record = try object(#"""
            {"id": "https://id.rijksmuseum.nl/1", "type": "HumanMadeObject",
             "subject_of": [{"digitally_carried_by": [{"access_point": [{"id": "http://www.rijksmuseum.nl/a"}]}]}]}
            """#)
        #expect(record.webPage == nil)
        let image = #"{"type": "DigitalObject", "access_point": ["http://iiif.micr.io/X/full/max/0/default.jpg"]}"#
        #expect(try LinkedArt.digitalObject(Data(image.utf8)) == nil)
    }
}
