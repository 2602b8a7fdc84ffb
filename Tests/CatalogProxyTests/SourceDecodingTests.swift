@testable import CatalogProxy
import Contracts
import Foundation
import Testing

/// Every recorded Ticketmaster and Rijksmuseum (collection API) response, through the adapters.
@Suite struct TicketmasterDecodingTests {
    let source = TicketmasterSource()

    @Test func everyRecordedResponseDecodes() throws {
        let files = try Fixtures.files(in: "ticketmaster")
        #expect(files.count >= 10)
        for file in files where !file.contains("images") {
            let body = try Fixtures.body(file)
            let status = try Fixtures.status(file)
            if status == 404 {
                #expect(source.isNotFound(status: status, body: body), "\(file)")
            } else if file.contains("detail") {
                let item = try #require(try source.decodeDetail(body), "\(file)")
                #expect(!item.title.isEmpty)
                #expect(source.canonicalID(item.id) == item.id, "\(file)")
            } else {
                let results = try source.decodeSearch(body, page: 0, pageSize: 20)
                #expect(!results.items.isEmpty, "\(file)")
                for item in results.items {
                    #expect(item.experience == .ticketmaster)
                    #expect(source.canonicalID(item.id) == item.id, "\(file) \(item.id)")
                    #expect(item.event?.localDate != nil, "\(file) \(item.id)")
                    if let image = item.imageURL { #expect(image.hasPrefix("https://"), "\(file) \(image)") }
                }
            }
        }
    }

    @Test func aCitySearchGivesCellsWithImageNameAndStart() throws {
        let results = try source.decodeSearch(
            Fixtures.body("ticketmaster/apguan-events-sanfrancisco-ladygaga.json"), page: 0, pageSize: 20)
        let item = try #require(results.items.first)
        #expect(results.items.count == 1)
        #expect(!results.hasMore)
        #expect(item.id == "G5vYZfNi53_zo")
        #expect(item.title.localizedCaseInsensitiveContains("lady gaga"))
        #expect(item.imageURL?.hasPrefix("https://") == true)
        #expect(item.event?.localDate != nil)
        #expect(item.event?.priceRanges == nil)  // prices belong to the detail
    }

    @Test func pricesAsIntegersAndDecimalsBothDecode() throws {
        let detail = try #require(try source.decodeDetail(
            Fixtures.body("ticketmaster/tmdocs-v2-event-detail-G5diZfkn0B-bh.json")))
        #expect(detail.event?.priceRanges == [.init(type: "standard", currency: "USD", min: 80, max: 80)])
        #expect(detail.event?.ticketURL?.hasPrefix("https://") == true)
        // The search fixture's one event, served as a detail: `min` 50.5 and `max` 251 in the same range.
        let search = try JSONSerialization.jsonObject(with: Fixtures.body(
            "ticketmaster/apguan-events-sanfrancisco-ladygaga.json")) as? [String: Any]
        let events = (search?["_embedded"] as? [String: Any])?["events"] as? [Any]
        let first = try #require(events?.first)
        let detailed = try #require(try source.decodeDetail(JSONSerialization.data(withJSONObject: first)))
        let event = try #require(try source.decodeSearch(
            Fixtures.body("ticketmaster/apguan-events-sanfrancisco-ladygaga.json"), page: 0, pageSize: 20).items.first)
        #expect(detailed.id == event.id)
        #expect(detailed.event?.priceRanges?.first?.min == 50.5)
        #expect(detailed.event?.priceRanges?.first?.max == 251)
    }

    @Test func eventsWithoutPricesVenuesOrTimesStillServe() throws {
        let results = try source.decodeSearch(
            Fixtures.body("ticketmaster/sdkjs-v2-events-search-200.nock.json"), page: 0, pageSize: 20)
        #expect(results.items.count == 20)
        #expect(results.items.contains { $0.event?.venue == nil })  // events without `_embedded`
        #expect(results.items.contains { $0.event?.timeTBA == true && $0.event?.localTime == nil })
        #expect(results.items.contains { $0.event?.status == nil })  // `status: {}`
        // The protocol-relative image is completed to https.
        let protocolRelative = try #require(results.items.first { $0.id == "Z1lMVSyiJynZ177_Cp" })
        #expect(protocolRelative.imageURL?.hasPrefix("https://") == true)
        // Padded, double-spaced venue names are cleaned.
        #expect(!results.items.contains { $0.subtitle?.contains("  ") == true || $0.subtitle?.hasSuffix(" ") == true })
    }

    @Test func anEventWithoutPricesIsServedWithoutThem() throws {
        let search = try JSONSerialization.jsonObject(with: Fixtures.body(
            "ticketmaster/sdkjs-v2-events-search-200.nock.json")) as? [String: Any]
        let events = (search?["_embedded"] as? [String: Any])?["events"] as? [[String: Any]] ?? []
        let withoutPrices = try #require(events.first { $0["priceRanges"] == nil })
        let item = try #require(try source.decodeDetail(JSONSerialization.data(withJSONObject: withoutPrices)))
        #expect(item.event?.priceRanges == nil)
        #expect(item.event?.ticketURL != nil)
    }

    @Test func theTimeZoneFallsBackToTheVenue() throws {
        let results = try source.decodeSearch(
            Fixtures.body("ticketmaster/zachbrown12-events-countryCode-US.json"), page: 0, pageSize: 20)
        #expect(results.items.allSatisfy { $0.event?.timeZone != nil })
        #expect(results.hasMore)
    }

    @Test func oneOddEventDoesNotCostThePageAndOddFieldsAreDropped() throws {
        let body = Data(#"""
            {"_embedded":{"events":[
              {"id":"Good1","name":"Fine","dates":{"start":{"localDate":"2030-01-01","dateTBA":true,"dateTBD":true}},
               "priceRanges":"not a list","images":{"url":"x"}},
              {"name":"no id"},
              "not even an object"
            ]},"page":{"totalElements":3}}
            """#.utf8)
        let results = try source.decodeSearch(body, page: 0, pageSize: 20)
        #expect(results.items.map(\.id) == ["Good1"])
        #expect(results.items[0].event?.dateTBA == true)
        #expect(results.items[0].event?.dateTBD == true)
        #expect(results.items[0].imageURL == nil)
    }

    @Test(arguments: ["<html>oops</html>", #"{"_embedded":{"events":{}}}"#, "", "[]"])
    func aBrokenBodyIsAMalformedBodyError(_ text: String) {
        #expect(throws: SourceError.self) { try source.decodeSearch(Data(text.utf8), page: 0, pageSize: 20) }
    }

    @Test func anEmptySearchHasNoItems() throws {
        let results = try source.decodeSearch(Data(#"{"page":{"totalElements":0}}"#.utf8), page: 0, pageSize: 20)
        #expect(results.items.isEmpty)
        #expect(!results.hasMore)
    }

    @Test(arguments: ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "Z7r9jZ1AeOOb_", "unknown-id"])
    func validIDs(_ id: String) { #expect(TicketmasterSource().canonicalID(id) == id) }

    @Test(arguments: ["", "../etc/passwd", "a/b", "a%2Fb", "id\r\nHost: evil", "id\n", "https://evil.example/x",
                      "a.b", String(repeating: "a", count: 65)])
    func invalidIDs(_ id: String) { #expect(TicketmasterSource().canonicalID(id) == nil) }
}

@Suite struct RijksmuseumDecodingTests {
    let source = RijksmuseumSource()

    @Test func everyRecordedCollectionResponseDecodes() throws {
        let files = try Fixtures.files(in: "rijksmuseum/legacy")
        #expect(files.count >= 9)
        for file in files {
            let body = try Fixtures.body(file)
            if file.contains("detail") {
                let item = try #require(try source.decodeDetail(body), "\(file)")
                #expect(source.canonicalID(item.id) == item.id, "\(file)")
            } else {
                let results = try source.decodeSearch(body, page: 0, pageSize: 10)
                for item in results.items {
                    #expect(source.canonicalID(item.id) == item.id, "\(file) \(item.id)")
                    if let image = item.imageURL { #expect(image.hasPrefix("https://"), "\(file) \(image)") }
                }
                #expect(results.items.isEmpty == file.contains("empty"), "\(file)")
            }
        }
    }

    @Test func theNightWatchDetailHasEnglishPlaqueDatingAndPlace() throws {
        let item = try #require(try source.decodeDetail(Fixtures.body("rijksmuseum/legacy/tanyaburke-detail-SK-C-5-en.json")))
        #expect(item.id == "SK-C-5")
        let art = try #require(item.artwork)
        #expect(art.maker == "Rembrandt van Rijn")
        #expect(art.dating == "1642")
        #expect(art.year == 1642)
        #expect(!art.productionPlaces.isEmpty)
        let plaque = try #require(art.plaqueDescription)
        #expect(plaque.contains("Rembrandt"))
        #expect(!plaque.contains("\r"))
        // Resized: the original is thousands of pixels wide.
        #expect(item.imageURL?.hasSuffix("=s1600") == true)
    }

    @Test func aDetailWithoutAnEnglishPlaqueLeavesItOutAndNeverShowsTheDutchDescription() throws {
        let item = try #require(try source.decodeDetail(
            Fixtures.body("rijksmuseum/legacy/kyrillosgait-collection-item-details-NG-MC-807.json")))
        #expect(item.artwork?.plaqueDescription == nil)
        #expect(item.artwork?.productionPlaces == ["Amsterdam"])  // recorded twice, served once
    }

    @Test func missingAndHiddenImagesAreAbsent() throws {
        let list = try source.decodeSearch(Fixtures.body("rijksmuseum/legacy/jayesh-art_objects_list_2.json"),
                                           page: 0, pageSize: 10)
        #expect(list.items.filter { $0.imageURL == nil }.count >= 2)  // `webImage: null`
        let hidden = try source.decodeSearch(Fixtures.body("rijksmuseum/legacy/timedwardsios-collection-1item.json"),
                                             page: 0, pageSize: 1)
        #expect(hidden.items.first?.imageURL == nil)  // `showImage: false`
        let first = try source.decodeSearch(Fixtures.body("rijksmuseum/legacy/jayesh-art_objects_list_1.json"),
                                            page: 0, pageSize: 10)
        #expect(first.hasMore)
        #expect(first.items.contains { $0.id == "BK-2018-2-163-2" && $0.imageURL == nil })  // hasImage false
    }

    @Test func anUnknownObjectNumberIsNotFound() throws {
        #expect(try source.decodeDetail(Data(#"{"elapsedMilliseconds":0,"artObject":null,"artObjectPage":null}"#.utf8)) == nil)
    }

    @Test(arguments: ["<html/>", #"{"artObjects":"x"}"#, "{}", "null"])
    func aBrokenSearchBodyIsAMalformedBodyError(_ text: String) {
        #expect(throws: SourceError.self) { try source.decodeSearch(Data(text.utf8), page: 0, pageSize: 10) }
    }

    @Test(arguments: [("SK-C-5", "SK-C-5"), ("sk-c-5", "SK-C-5"), ("RP-P-OB-35.976", "RP-P-OB-35.976"),
                      ("RP-D-1982-43-MARIS(MATTHIJS)-2B", "RP-D-1982-43-MARIS(MATTHIJS)-2B"),
                      ("RP-T-1930-54(V)", "RP-T-1930-54(V)"), ("NG-MC-1349-C", "NG-MC-1349-C")])
    func validObjectNumbers(_ id: String, _ canonical: String) { #expect(source.canonicalID(id) == canonical) }

    @Test(arguments: ["", "SK", "../SK-C-5", "SK-C-5/../../x", "SK..C", "SK-C-..", "SK-C-5%2F", "SK-C-5\r\n",
                      "SK-C-5\n", "https://evil.example/SK-C-5", "SK-C-5?x=1", "SK C 5",
                      // A near miss with many parts: this once took the regex engine exponential time.
                      "SK" + String(repeating: "-AAAA", count: 12) + "!"])
    func invalidObjectNumbers(_ id: String) { #expect(source.canonicalID(id) == nil) }
}
