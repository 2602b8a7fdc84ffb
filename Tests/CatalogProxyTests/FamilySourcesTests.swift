@testable import CatalogProxy
import Contracts
import Foundation
import Testing

/// The family's sources over their recorded responses (`mobiles/`, `flashcards/`, `nyt-books/`, `google-books/`),
/// quirks included, without I/O.
@Suite struct FamilySourcesTests {
    static func body(_ path: String) throws -> Data { try Fixtures.body(path) }

    // MARK: Mobiles

    @Test func everyRecordedPhoneListDecodesWithPricesAsIntegersOrDecimals() throws {
        let source = MobilesSource()
        for file in ["mobiles/harshil64-mobiles-list.json", "mobiles/keepsecretly-mobiles-list.json"] {
            let phones = try source.items(fromFiles: [Self.body(file)])
            #expect(phones.count == 5, "\(file)")
            #expect(phones.allSatisfy { $0.phone?.price != nil && $0.phone?.rating != nil }, "\(file)")
            #expect(phones.allSatisfy { $0.imageURL?.hasPrefix("https://") == true }, "\(file)")
            #expect(phones.allSatisfy { source.canonicalID($0.id) == $0.id }, "\(file)")
        }
        // `179` and `179.99` both read as numbers.
        let prices = try source.items(fromFiles: [Self.body("mobiles/harshil64-mobiles-list.json")])
            .compactMap(\.phone?.price)
        #expect(prices.contains { $0 == $0.rounded() })
        #expect(prices.contains { $0 != $0.rounded() })
    }

    @Test func aPhonesPicturesComeFromTheImagesFileSchemeLessOnesCompleted() throws {
        let source = MobilesSource()
        let phones = try source.items(fromFiles: [
            Self.body("mobiles/harshil64-mobiles-list.json"), Self.body("mobiles/unidentified-repo-mobile-1-images.json"),
        ])
        let first = try #require(phones.first { $0.id == "1" })
        let images = try #require(first.phone?.images)
        #expect(images.count >= 3)
        #expect(images.allSatisfy { $0.hasPrefix("https://") })
        // Without recorded pictures, a phone shows its thumbnail; a list cell carries none.
        let second = try #require(phones.first { $0.id == "2" })
        #expect(second.phone?.images == [second.imageURL].compactMap { $0 })
        #expect(source.listing(of: first).phone?.images == nil)
        #expect(Upstream.secureURL("www.91-img.com/pictures/nokia-6.jpg") == "https://www.91-img.com/pictures/nokia-6.jpg")
    }

    @Test func theSourcesOwnErrorsArePassedThrough() throws {
        let phones = try MobilesSource().items(fromFiles: [Self.body("mobiles/harshil64-mobiles-list.json")])
        let moto = try #require(phones.first { $0.title.contains("Moto E4 Plus") })
        #expect(moto.phone?.brand == "Samsung")  // as the source says, wrong as it is
    }

    @Test func aPhoneDetailRecordingDecodesLikeAListEntry() throws {
        let detail = try Self.body("mobiles/harshil64-mobile-2-detail.json")
        let phones = try MobilesSource().items(fromFiles: [Data("[".utf8) + detail + Data("]".utf8)])
        #expect(phones.map(\.id) == ["2"])
    }

    // MARK: Flash cards

    @Test func bothRecordedCardShapesDecode() throws {
        let source = FlashCardsSource()
        let live = try source.items(fromFiles: [Self.body("flashcards/bcecilio-cards-live.json")])
        #expect(live.count == 52)
        #expect(live.allSatisfy { !$0.title.isEmpty && ($0.card?.facts.count ?? 0) >= 1 })
        let wrapped = try source.items(fromFiles: [Self.body("flashcards/tseringlamanyc-cards-wrapper-SAMPLE.json")])
        #expect(!wrapped.isEmpty)
        #expect(wrapped.allSatisfy { ($0.card?.facts.count ?? 0) >= 2 })
        // Typographic quotes and dashes stay as they are.
        #expect(live.contains { $0.card?.facts.contains { $0.contains("’") || $0.contains("—") } == true })
    }

    @Test func untrustedCardTextIsCleanedAndBounded() throws {
        let long = String(repeating: "x", count: 5000)
        let body = Data("""
            [{"id":"1","quizTitle":"Bell\\u0007 and\\u202Eevil\\u200B  title","facts":["one\\r\\ntwo\\u0000", "\(long)"]},
             {"id":"2","quizTitle":"   ","facts":["a fact"]},
             {"id":"3","cardTitle":"No facts","facts":[]},
             {"id":"../4","quizTitle":"Bad id","facts":["f"]},
             {"id":5,"quizTitle":"Numeric id","facts":["f"]},
             {"id":"1","quizTitle":"Duplicate","facts":["f"]}]
            """.utf8)
        let cards = try FlashCardsSource().items(fromFiles: [body])
        #expect(cards.map(\.id) == ["1", "5"])
        #expect(cards[0].title == "Bell andevil title")
        #expect(cards[0].card?.facts[0] == "one\ntwo")
        #expect(cards[0].card?.facts[1].count == FlashCardsSource.maximumFactLength)
    }

    // MARK: NYT best sellers

    @Test(arguments: ["nyt-books/atj2097-names-2019-10.json", "nyt-books/speekins-names-2023-04.json",
                      "nyt-books/seanredmond-names-2014.json"])
    func everyRecordedListOfNamesDecodes(_ file: String) throws {
        let categories = try NYTBooks.categories(Self.body(file))
        #expect(categories.count >= 10)
        #expect(categories.allSatisfy { NYTBooks.isListID($0.id) && !$0.name.isEmpty })
        #expect(categories.contains { $0.id == "hardcover-fiction" })
        if file.contains("2014") {
            #expect(categories.allSatisfy { $0.updated == nil })  // the older shape names lists only
        } else {
            #expect(Set(categories.compactMap(\.updated)) == ["weekly", "monthly"])
        }
    }

    @Test func aCurrentListHasItsBooksInRankOrderWithCoversAndIsbns() throws {
        let books = try NYTBooks.books(Self.body("nyt-books/atj2097-lists-current-hardcover-fiction-2019-10-27.json"),
                                       category: "hardcover-fiction", experience: .bestsellers)
        #expect(books.count == 15)
        #expect(books.map { $0.book?.rank } == Array(1...15))
        let first = try #require(books.first)
        #expect(first.id == "9780316494021")
        #expect(first.subtitle == "James Patterson and Maxine Paetro")
        #expect(first.imageURL?.hasPrefix("https://") == true)
        #expect(first.book?.category == "hardcover-fiction")
        #expect(first.book?.isbns?.contains("9780316420273") == true)
        #expect(first.book?.buyURL?.hasPrefix("https://www.amazon.com/") == true)
        #expect(first.book?.weeksOnList == 1)
    }

    @Test func theBookImageOfABookWithoutOneIsAbsent() throws {
        // A synthetic list in the recorded shape: no cover, price as a string (the API's type changed over time).
        let body = Data("""
            {"status":"OK","results":{"books":[{"rank":"2","primary_isbn13":"9780316420273","title":"T","price":"0.00",
             "book_image":null,"weeks_on_list":0},{"rank":1,"title":"No ISBN"}]}}
            """.utf8)
        let books = try NYTBooks.books(body, category: "x", experience: .bestsellers)
        #expect(books.map(\.id) == ["9780316420273"])
        #expect(books[0].imageURL == nil)
        #expect(books[0].book?.rank == 2)
        #expect(books[0].book?.weeksOnList == 0)
    }

    @Test func placeholdersOfTheRecordedListAreAbsentNotFacts() throws {
        let books = try NYTBooks.books(Self.body("nyt-books/atj2097-lists-current-hardcover-fiction-2019-10-27.json"),
                                       category: "hardcover-fiction", experience: .bestsellers)
        let byID = Dictionary(uniqueKeysWithValues: books.map { ($0.id, $0) })
        // The capture writes `"primary_isbn10": "None"` for these two books.
        for id in ["9780316435567", "9780525536628"] {
            let book = try #require(byID[id]?.book)
            #expect(book.isbn10 == nil, "\(id)")
            #expect(book.isbn13 == id)
        }
        #expect(byID["9780316494021"]?.book?.isbn10 == "031649402X")
        // Its empty strings (`age_group`, `contributor_note`, links) never become facts either.
        #expect(books.allSatisfy { $0.book?.isbn10.map { ISBN.ten($0) == $0 } ?? true })
        #expect(books.allSatisfy { $0.book?.description?.isEmpty != true && $0.book?.publisher?.isEmpty != true })
    }

    @Test func placeholderWordsAndZeroDatesAreDropped() throws {
        for placeholder in ["None", " none ", "NULL", "N/A", "undefined", "-", "", "   "] {
            #expect(Upstream.clean(placeholder) == nil, "\(placeholder)")
        }
        #expect(Upstream.clean("  Knopf  Doubleday ") == "Knopf Doubleday")
        #expect(Upstream.collapsed("None") == "None")  // people's text (a card's fact) has no placeholders
        // The zero dates of the legacy museum detail recording (`createdOn`, `updatedOn`), and their kin.
        let legacy = try JSONSerialization.jsonObject(with: Self.body(
            "rijksmuseum/legacy/kyrillosgait-collection-item-details-NG-MC-807.json")) as? [String: Any]
        let zeroDates = Self.strings(in: legacy).filter { $0.hasPrefix("0001-01-01") }
        #expect(!zeroDates.isEmpty)
        for date in zeroDates + ["0000-00-00", "0000", "1970-01-01T00:00:00Z"] {
            #expect(Upstream.date(date) == nil, "\(date)")
        }
        #expect(Upstream.date("2019-10") == "2019-10")
        #expect(Upstream.date("2016-07-27T23:30:00Z") == "2016-07-27T23:30:00Z")
    }

    /// Every string value in a decoded JSON value.
    static func strings(in value: Any?) -> [String] {
        switch value {
        case let text as String: [text]
        case let array as [Any]: array.flatMap { strings(in: $0) }
        case let object as [String: Any]: object.values.flatMap { strings(in: $0) }
        default: []
        }
    }

    @Test(arguments: ["031649402X", "0-316-49402-x", "0735219095"])
    func validISBN10s(_ text: String) { #expect(ISBN.ten(text) != nil) }

    @Test(arguments: ["None", "0316494021", "03164940", "031649402XX", "X316494021", ""])
    func invalidISBN10s(_ text: String) { #expect(ISBN.ten(text) == nil) }

    @Test(arguments: ["9780316420273", "978-0-316-42027-3"])
    func validISBNs(_ text: String) { #expect(ISBN.thirteen(text) == "9780316420273") }

    @Test(arguments: ["9780316420274", "978031642027", "97803164202733", "abcdefghijklm", "../etc/passwd", ""])
    func invalidISBNs(_ text: String) { #expect(ISBN.thirteen(text) == nil) }

    @Test func listIDsHaveOneShape() {
        #expect(NYTBooks.isListID("hardcover-fiction"))
        #expect(NYTBooks.isListID("combined-print-and-e-book-fiction"))
        for bad in ["Hardcover Fiction", "../names", "a--b", "-a", "a/b", "", String(repeating: "a", count: 81)] {
            #expect(!NYTBooks.isListID(bad), "\(bad)")
        }
        #expect(NYTBooks.encodedName("Children’s Middle Grade Hardcover") == "children-s-middle-grade-hardcover")
    }

    // MARK: Google Books

    @Test func aVolumeIsTheOneWhoseIdentifiersMatch() throws {
        let body = try Self.body("google-books/atj2097-volumes-isbn-0316420271.json")
        let volume = try #require(try GoogleBooks.volume(body, isbn: "9780316420273"))
        #expect(volume.pageCount == 368)
        #expect(volume.publishedDate == "2019-10-07")
        #expect(volume.description?.hasPrefix("If the Women's Murder Club") == true)
        #expect(try GoogleBooks.volume(body, isbn: "9780316494021") == nil)  // another edition: not trusted
        let search = try Self.body("google-books/cmsanner-volumes-q-search.json")
        #expect(try GoogleBooks.volume(search, isbn: "9780316420273") == nil)
    }

    @Test func noMatchIsABodyWithoutItems() throws {
        #expect(try GoogleBooks.volume(Data(#"{"kind":"books#volumes","totalItems":0}"#.utf8), isbn: "9780316420273") == nil)
        #expect(throws: SourceError.self) { try GoogleBooks.volume(Data(#"{"error":{"code":400}}"#.utf8), isbn: "1") }
    }

    @Test func coversAreHTTPSWithoutThePageCurlAndDescriptionsPlainText() {
        #expect(GoogleBooks.cover("http://books.google.com/books/content?id=x&printsec=frontcover&img=1&zoom=1&edge=curl")
            == "https://books.google.com/books/content?id=x&printsec=frontcover&img=1&zoom=1")
        #expect(GoogleBooks.plainText("<p>Bold <b>text</b> &amp; more</p>") == "\nBold text & more")
    }

    /// The detail asks Google Books about the book's editions in turn, and keeps the list's facts where it has them.
    @Test func aDetailEnrichesTheListedBookFromTheEditionGoogleKnows() throws {
        let listed = try #require(try NYTBooks.books(
            Self.body("nyt-books/atj2097-lists-current-hardcover-fiction-2019-10-27.json"),
            category: "hardcover-fiction", experience: .bestsellers).first)
        let google = try Self.body("google-books/atj2097-volumes-isbn-0316420271.json")
        let (result, requests) = try drive(BestsellersSource().detail(id: listed.id, known: listed)) { request in
            #expect(request.upstream == .googleBooks)
            #expect(request.tolerant)
            return request.query.first?.value == "isbn:9780316420273"
                ? UpstreamAnswer(status: 200, body: google)
                : UpstreamAnswer(status: 200, body: Data(#"{"kind":"books#volumes","totalItems":0}"#.utf8))
        }
        guard case .item(let book) = result else { Issue.record("expected an item, got \(result)"); return }
        #expect(book.id == listed.id)
        #expect(book.book?.rank == 1)  // the list's facts stay
        #expect(book.book?.pageCount == 368)
        #expect(book.book?.enriched == true)
        #expect(book.book?.description?.hasPrefix("If the Women's Murder Club") == true)
        #expect(requests.map { $0.query.first?.value } == ["isbn:9780316494021", "isbn:9780316420273"])
    }

    @Test func aSpentGoogleQuotaLeavesTheListsFactsAndIsNotKept() throws {
        let listed = try #require(try NYTBooks.books(
            Self.body("nyt-books/atj2097-lists-current-hardcover-fiction-2019-10-27.json"),
            category: "hardcover-fiction", experience: .bestsellers).first)
        let (result, requests) = try drive(BestsellersSource().detail(id: listed.id, known: listed)) { _ in
            .failed(.rateLimited(retryAfter: 60))
        }
        guard case .incomplete(let book) = result else { Issue.record("expected the list's facts, got \(result)"); return }
        #expect(book.book?.enriched == false)
        #expect(book.title == listed.title)
        #expect(requests.count == 1)  // unavailable: not asked again for the other editions
        // Never listed and Google unavailable: the failure itself.
        #expect(throws: UpstreamFailure.self) {
            try drive(BestsellersSource().detail(id: listed.id, known: nil)) { _ in .failed(.timeout) }
        }
    }

    @Test func aQuotaRefusalIsRecognisedWhateverItsStatus() throws {
        #expect(UpstreamClient.isQuotaRefusal(Data(#"{"error":{"errors":[{"reason":"dailyLimitExceeded"}]}}"#.utf8)))
        #expect(UpstreamClient.isQuotaRefusal(Data(#"{"error":{"status":"RESOURCE_EXHAUSTED"}}"#.utf8)))
        #expect(!UpstreamClient.isQuotaRefusal(Data(#"{"error":{"message":"API key not valid"}}"#.utf8)))
    }
}
