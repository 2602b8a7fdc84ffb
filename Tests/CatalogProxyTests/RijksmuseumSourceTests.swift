@testable import CatalogProxy
import Contracts
import Foundation
import Testing

/// Runs a source's steps without I/O, answering each request with `answer` (a recorded body, a 404), and records the
/// requests in the order the steps made them.
func drive<Value>(_ step: SourceStep<Value>, answer: (UpstreamRequest) throws -> UpstreamAnswer) throws
    -> (value: Value, requests: [UpstreamRequest])
{
    var step = step
    var requests: [UpstreamRequest] = []
    while true {
        switch step {
        case .done(let value):
            return (value, requests)
        case .fetch(let batch, let next):
            requests += batch
            step = try next(try batch.map(answer))
        }
    }
}

/// The Rijksmuseum source's steps over the real captures of the museum's data services (`rijksmuseum/data-api`).
@Suite struct RijksmuseumSourceTests {
    let source = RijksmuseumSource()
    static let notFound = UpstreamAnswer(status: 404, body: Data(#"{"error":"not found"}"#.utf8))

    static func recorded(_ file: String) throws -> UpstreamAnswer {
        UpstreamAnswer(status: 200, body: try Fixtures.body("rijksmuseum/data-api/\(file).json"))
    }

    /// The recorded records by number; everything else is a 404.
    static func records(_ request: UpstreamRequest) throws -> UpstreamAnswer {
        #expect(request.upstream == .rijksmuseumRecords)
        #expect(request.accept == "application/ld+json")
        switch request.path {
        case "/200107928": return try recorded("jorgetroya80-object-200107928")
        case "/200117708": return try recorded("kintopp-hmo-200117708-linked-art")
        case "/2001": return try recorded("maksym-object-2001-linked-art")
        case "/202107928": return try recorded("jorgetroya80-visual-202107928")
        case "/500711199912110510799100": return try recorded("jorgetroya80-digital-500711199912110510799100")
        // Object 2001's maker is recorded under no number; Rembrandt's record stands in, to show the extra GET.
        case "/21029638": return try recorded("jorgetroya80-person-2103429")
        default: return notFound
        }
    }

    @Test func theNightWatchResolvesWithItsImageMakerAndPlaque() throws {
        let (item, requests) = try drive(source.resolve(reference: "200107928"), answer: Self.records)
        let art = try #require(item)
        #expect(art.id == "SK-C-5")
        #expect(art.title.hasPrefix("The Night Watch"))
        #expect(art.subtitle == "Rembrandt van Rijn")
        #expect(art.imageURL == "https://iiif.micr.io/PJEZO/full/max/0/default.jpg")
        #expect(art.artwork?.dating == "1642")
        #expect(art.artwork?.year == 1642)
        #expect(art.artwork?.productionPlaces == ["Amsterdam"])
        #expect(art.artwork?.plaqueDescription?.hasPrefix("Rembrandt’s largest") == true)
        #expect(art.artwork?.webPage?.hasPrefix("https://www.rijksmuseum.nl/") == true)
        // Object, then its VisualItem (the maker is named in the object), then the DigitalObject.
        #expect(requests.map(\.path) == ["/200107928", "/202107928", "/500711199912110510799100"])
    }

    @Test func aDutchOnlyObjectWhoseMakerIsOnlyAReferenceCostsOneMoreGet() throws {
        let (item, requests) = try drive(source.resolve(reference: "2001"), answer: Self.records)
        let art = try #require(item)
        #expect(art.id == "RP-P-2010-222-3315")
        #expect(art.title == "Before, Behind, Between, Above, Below")  // no English title: the Dutch one
        #expect(art.artwork?.maker == "Rembrandt van Rijn")  // from the Person record
        #expect(art.imageURL == nil)  // its VisualItem is not recorded: no image, not a failure
        // No English text: its Dutch description (`referred_to_by`), said to be Dutch.
        #expect(art.artwork?.plaqueDescription?.hasPrefix("Links naast de vrouw") == true)
        #expect(art.artwork?.plaqueLanguage == "nl")
        #expect(Set(requests.map(\.path)) == ["/2001", "/2021", "/21029638"])
        // A maker's record is shared between replicas; the object's own records are not.
        #expect(requests.first { $0.path == "/21029638" }?.sharedFor != nil)
        #expect(requests.first { $0.path == "/2001" }?.sharedFor == nil)
    }

    @Test func anObjectWithoutEnglishTextOrImageStillResolves() throws {
        let (item, requests) = try drive(source.resolve(reference: "200117708"), answer: Self.records)
        let art = try #require(item)
        #expect(art.title == "Three Scribes")
        #expect(art.artwork?.dating == "c. 1628 - c. 1629")
        #expect(art.artwork?.productionPlaces == ["Leiden"])
        #expect(art.artwork?.plaqueDescription == nil)
        #expect(art.imageURL == nil)
        #expect(!requests.contains { $0.path == "/2103429" })  // named in the object: no Person GET
    }

    @Test func aRecordTheMuseumNoLongerHasResolvesToNothing() throws {
        let (item, requests) = try drive(source.resolve(reference: "999"), answer: Self.records)
        #expect(item == nil)
        #expect(requests.count == 1)
    }

    @Test func aListCellGetsAListSizedIIIFImageAndNoPlaque() throws {
        let item = try #require(try drive(source.resolve(reference: "200107928"), answer: Self.records).value)
        let listed = source.listing(of: item)
        #expect(listed.imageURL == "https://iiif.micr.io/PJEZO/full/400,/0/default.jpg")
        #expect(listed.artwork?.plaqueDescription == nil)
        #expect(listed.artwork?.maker == item.artwork?.maker)
    }

    /// The museum's Google-hosted pictures (the legacy recordings' `webImage.url`, at the end of the stand-ins' image
    /// chains) are asked at a cell's size in a list and at a detail's in a detail: never `=s0`, the original.
    @Test func googleHostedPicturesAreAskedAtTheCellsAndTheDetailsSize() throws {
        let legacy = try JSONSerialization.jsonObject(with: Fixtures.body(
            "rijksmuseum/legacy/timedwardsios-collection-ps100.json")) as? [String: Any]
        let urls = (legacy?["artObjects"] as? [[String: Any]] ?? [])
            .compactMap { ($0["webImage"] as? [String: Any])?["url"] as? String }
        #expect(urls.count >= 50 && urls.allSatisfy(SizedImage.isOriginalSize))
        for url in urls {
            let base = String(url.dropLast("=s0".count))
            #expect(SizedImage.cell(url) == base + "=s400")
            #expect(SizedImage.detail(url) == base + "=s1600")
            let item = CatalogItem(id: "SK-A-1", experience: .rijksmuseum, title: "t", imageURL: SizedImage.detail(url),
                                   artwork: ArtworkFacts(maker: nil, plaqueDescription: "p", dating: nil, year: nil,
                                                         productionPlaces: []))
            #expect(source.listing(of: item).imageURL == base + "=s400")
        }
        // Other suffixes and none at all; other hosts and IIIF as the rest of this suite says.
        #expect(SizedImage.cell("https://lh6.ggpht.com/abc") == "https://lh6.ggpht.com/abc=s400")
        #expect(SizedImage.cell("https://lh3.googleusercontent.com/abc=w800-h600")
            == "https://lh3.googleusercontent.com/abc=s400")
        #expect(SizedImage.cell("https://s1.nyt.com/du/books/images/9780316494021.jpg")
            == "https://s1.nyt.com/du/books/images/9780316494021.jpg")
        #expect(SizedImage.detail("https://iiif.micr.io/PJEZO/full/max/0/default.jpg")
            == "https://iiif.micr.io/PJEZO/full/max/0/default.jpg")
    }

    @Test func aSearchTakesAPageOfIdsFromTheMakerSearchFirst() throws {
        let (results, requests) = try drive(source.search(SearchQuery(text: "Rembrandt", sort: .relevance), at: PageCursor(pageSize: 20))) { request in
            #expect(request.upstream == .rijksmuseumSearch)
            return try Self.recorded("jorgetroya80-search-rembrandt-page1")
        }
        #expect(results.entries.count == 20)
        #expect(results.entries[1] == .reference("200107928"))
        #expect(requests.count == 1)
        let query = Dictionary(uniqueKeysWithValues: requests[0].query.map { ($0.name, $0.value) })
        #expect(query == ["creator": "Rembrandt", "imageAvailable": "true"])
        #expect(requests[0].sharedFor != nil)  // later pages in these 100 ids cost no call
        #expect(results.next == PageCursor(pageSize: 20, offset: 20))
    }

    /// A page that crosses the end of the upstream's page follows its token; when the makers' search ends, the
    /// titles' search goes on, less the ids both filters match; nothing is taken twice and nothing skipped.
    @Test func pagingFollowsTheTokenThenTheTitleSearchWithoutDuplicates() throws {
        let page1 = try Self.recorded("jorgetroya80-search-rembrandt-page1")
        let oneHit = try Self.recorded("jorgetroya80-search-rembrandt-nachtwacht")
        let token = try #require(try LinkedArt.searchPage(page1.body).nextPageToken)
        let (results, requests) = try drive(source.search(SearchQuery(text: "Rembrandt", sort: .relevance), at: PageCursor(pageSize: 20, offset: 95))) {
            request in
            let query = Dictionary(uniqueKeysWithValues: request.query.map { ($0.name, $0.value) })
            switch (query["creator"], query["title"], query["pageToken"]) {
            case ("Rembrandt", nil, nil): return page1
            case ("Rembrandt", nil, token?): return oneHit  // the makers' last page: one id, no `next`
            case ("Rembrandt", "Rembrandt", nil): return oneHit  // the overlap: the Night Watch
            case (nil, "Rembrandt", nil): return page1  // the titles' search (page 1 stands in)
            default:
                Issue.record("unexpected request \(query)")
                return Self.notFound
            }
        }
        let numbers = results.entries.map { entry -> String in
            guard case .reference(let number) = entry else { return "" }
            return number
        }
        let firstPage = try LinkedArt.searchPage(page1.body).recordNumbers
        #expect(numbers.count == 20)
        #expect(Array(numbers.prefix(5)) == Array(firstPage.suffix(5)))
        #expect(numbers[5] == "200107928")
        // Titles: the overlap (the Night Watch, second) left out, the rest in order.
        #expect(Array(numbers.dropFirst(6)) == Array(firstPage.filter { $0 != "200107928" }.prefix(14)))
        #expect(results.next == PageCursor(pageSize: 20, phase: 1, offset: 15))
        #expect(requests.count == 4)
    }

    @Test func anEmptySearchEndsWithoutACursor() throws {
        let (results, _) = try drive(source.search(SearchQuery(text: "zzqqxx", sort: .relevance), at: PageCursor(pageSize: 20))) { _ in
            try Self.recorded("jorgetroya80-search-empty")
        }
        #expect(results.entries.isEmpty)
        #expect(results.next == nil)
    }

    @Test func aDetailFindsTheRecordByObjectNumber() throws {
        let (found, requests) = try drive(source.detail(id: "SK-C-5", known: nil)) { _ in
            try Self.recorded("jorgetroya80-search-rembrandt-nachtwacht")
        }
        #expect(found == .reference("200107928"))
        #expect(requests.first?.query.first == .init(name: "objectNumber", value: "SK-C-5"))
        let (missing, _) = try drive(source.detail(id: "SK-X-1", known: nil)) { _ in try Self.recorded("jorgetroya80-search-empty") }
        #expect(missing == .notFound)
    }

    @Test(arguments: ["<html/>", "{}", "[]", #"{"type":"OrderedCollectionPage","partOf":{"totalItems":3}}"#])
    func aBrokenSearchBodyThrows(_ text: String) {
        #expect(throws: (any Error).self) {
            try drive(source.search(SearchQuery(text: "x", sort: .relevance), at: PageCursor(pageSize: 5))) { _ in
                UpstreamAnswer(status: 200, body: Data(text.utf8))
            }
        }
    }

    @Test(arguments: [("SK-C-5", "SK-C-5"), ("sk-c-5", "SK-C-5"), ("RP-P-OB-35.976", "RP-P-OB-35.976"),
                      ("RP-D-1982-43-MARIS(MATTHIJS)-2B", "RP-D-1982-43-MARIS(MATTHIJS)-2B"),
                      ("RP-T-1930-54(V)", "RP-T-1930-54(V)"), ("NG-MC-1349-C", "NG-MC-1349-C")])
    func validObjectNumbers(_ id: String, _ canonical: String) { #expect(source.canonicalID(id) == canonical) }

    @Test(arguments: ["", "SK", "../SK-C-5", "SK-C-5/../../x", "SK..C", "SK-C-..", "SK-C-5%2F", "SK-C-5\r\n",
                      "SK-C-5\n", "https://evil.example/SK-C-5", "SK-C-5?x=1", "SK C 5", "SK-C-5*", "SK-C-?",
                      // A near miss with many parts: this once took the regex engine exponential time.
                      "SK" + String(repeating: "-AAAA", count: 12) + "!"])
    func invalidObjectNumbers(_ id: String) { #expect(source.canonicalID(id) == nil) }
}
