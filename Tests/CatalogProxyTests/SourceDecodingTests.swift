@testable import CatalogProxy
import Contracts
import Foundation
import Testing

/// Every recorded Ticketmaster response, through the adapter.
@Suite struct TicketmasterDecodingTests {
    let source = TicketmasterSource()

    @Test func everyRecordedResponseDecodes() throws {
        let files = try Fixtures.files(in: "ticketmaster")
        #expect(files.count >= 10)
        for file in files where !file.contains("images") {
            let body = try Fixtures.body(file)
            let status = try Fixtures.status(file)
            if status == 404 {
                #expect(file.contains("404"), "\(file)")
            } else if file.contains("detail") {
                let item = try source.decodeDetail(body)
                #expect(!item.title.isEmpty)
                #expect(source.canonicalID(item.id) == item.id, "\(file)")
            } else {
                let results = try source.decodeSearch(body, at: PageCursor(pageSize: 20))
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
            Fixtures.body("ticketmaster/apguan-events-sanfrancisco-ladygaga.json"), at: PageCursor(pageSize: 20))
        let item = try #require(results.items.first)
        #expect(results.items.count == 1)
        #expect(!results.hasMore)
        #expect(item.id == "G5vYZfNi53_zo")
        #expect(item.title.localizedCaseInsensitiveContains("lady gaga"))
        #expect(item.imageURL?.hasPrefix("https://") == true)
        #expect(item.event?.localDate != nil)
        // A list cell carries what the favorites cell shows: the prices, the ticket link, the notes.
        #expect(item.event?.priceRanges?.first?.min == 50.5)
        #expect(item.event?.ticketURL?.hasPrefix("https://") == true)
    }

    /// One cell per experience: an event's cell read from its detail answer (`view=cell`, what a favorite keeps) is
    /// the very cell its search lists, image included; the detail has the larger image.
    @Test func anEventsCellFromItsDetailAnswerIsItsListCell() throws {
        let body = try Fixtures.body("ticketmaster/apguan-events-sanfrancisco-ladygaga.json")
        let listed = try #require(try source.decodeSearch(body, at: PageCursor(pageSize: 20)).items.first)
        let search = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        let event = try #require(((search?["_embedded"] as? [String: Any])?["events"] as? [Any])?.first)
        let answer = UpstreamAnswer(status: 200, body: try JSONSerialization.data(withJSONObject: event))
        guard case .fetch(let requests, let next) = try #require(source.cell(id: listed.id)),
              case .done(.item(let cell)) = try next([answer])
        else { Issue.record("the cell is one fetch of the event"); return }
        #expect(requests.map(\.path) == ["/discovery/v2/events/\(listed.id).json"])
        #expect(cell == listed)
        let detail = try source.decodeDetail(answer.body)
        #expect(detail.imageURL != cell.imageURL)
        #expect(detail.event?.priceRanges == cell.event?.priceRanges && detail.event?.info == cell.event?.info)
    }

    @Test func pricesAsIntegersAndDecimalsBothDecode() throws {
        let detail = try source.decodeDetail(
            Fixtures.body("ticketmaster/tmdocs-v2-event-detail-G5diZfkn0B-bh.json"))
        #expect(detail.event?.priceRanges == [.init(type: "standard", currency: "USD", min: 80, max: 80)])
        #expect(detail.event?.ticketURL?.hasPrefix("https://") == true)
        // The search fixture's one event, served as a detail: `min` 50.5 and `max` 251 in the same range.
        let search = try JSONSerialization.jsonObject(with: Fixtures.body(
            "ticketmaster/apguan-events-sanfrancisco-ladygaga.json")) as? [String: Any]
        let events = (search?["_embedded"] as? [String: Any])?["events"] as? [Any]
        let first = try #require(events?.first)
        let detailed = try source.decodeDetail(JSONSerialization.data(withJSONObject: first))
        let event = try #require(try source.decodeSearch(
            Fixtures.body("ticketmaster/apguan-events-sanfrancisco-ladygaga.json"), at: PageCursor(pageSize: 20)).items.first)
        #expect(detailed.id == event.id)
        #expect(detailed.event?.priceRanges?.first?.min == 50.5)
        #expect(detailed.event?.priceRanges?.first?.max == 251)
    }

    @Test func eventsWithoutPricesVenuesOrTimesStillServe() throws {
        let results = try source.decodeSearch(
            Fixtures.body("ticketmaster/sdkjs-v2-events-search-200.nock.json"), at: PageCursor(pageSize: 20))
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
        let item = try source.decodeDetail(JSONSerialization.data(withJSONObject: withoutPrices))
        #expect(item.event?.priceRanges == nil)
        #expect(item.event?.ticketURL != nil)
    }

    @Test func theTimeZoneFallsBackToTheVenue() throws {
        let results = try source.decodeSearch(
            Fixtures.body("ticketmaster/zachbrown12-events-countryCode-US.json"), at: PageCursor(pageSize: 20))
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
        let results = try source.decodeSearch(body, at: PageCursor(pageSize: 20))
        #expect(results.items.map(\.id) == ["Good1"])
        #expect(results.items[0].event?.dateTBA == true)
        #expect(results.items[0].event?.dateTBD == true)
        #expect(results.items[0].imageURL == nil)
    }

    @Test(arguments: ["<html>oops</html>", #"{"_embedded":{"events":{}}}"#, "", "[]"])
    func aBrokenBodyIsAMalformedBodyError(_ text: String) {
        #expect(throws: SourceError.self) { try source.decodeSearch(Data(text.utf8), at: PageCursor(pageSize: 20)) }
    }

    @Test func anEmptySearchHasNoItems() throws {
        let results = try source.decodeSearch(Data(#"{"page":{"totalElements":0}}"#.utf8), at: PageCursor(pageSize: 20))
        #expect(results.items.isEmpty)
        #expect(!results.hasMore)
    }

    @Test(arguments: ["G5diZfkn0B-bh", "vv17FZfdGkSrrMju", "Z7r9jZ1AeOOb_", "unknown-id"])
    func validIDs(_ id: String) { #expect(TicketmasterSource().canonicalID(id) == id) }

    @Test(arguments: ["", "../etc/passwd", "a/b", "a%2Fb", "id\r\nHost: evil", "id\n", "https://evil.example/x",
                      "a.b", String(repeating: "a", count: 65)])
    func invalidIDs(_ id: String) { #expect(TicketmasterSource().canonicalID(id) == nil) }
}

extension SearchResults {
    /// The items of a source whose results are items (Ticketmaster).
    var items: [CatalogItem] {
        entries.compactMap { entry in
            if case .item(let item) = entry { return item }
            return nil
        }
    }

    var hasMore: Bool { next != nil }
}
