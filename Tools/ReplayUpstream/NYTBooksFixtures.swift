import Foundation

/// The NYT Books API (`api.nytimes.com/svc/books/v3`) as the replay plays it: the list names, the current list of
/// each named list, `/lists.json`, and the overviews of every current list (``NYTOverview``).
///
/// Only hardcover fiction was recorded in the current-list shape, so that list is served byte for byte; every other
/// list of the names file gets a body of the same shape made from the books of the two recorded `/lists.json` bodies
/// (``NYTBookPool``), so a client can browse every category and see them differ. The bodies are built once, here.
struct NYTBooksFixtures: Sendable {
    static let names = "nyt-books/speekins-names-2023-04.json"
    static let currentCapture = "nyt-books/atj2097-lists-current-hardcover-fiction-2019-10-27.json"
    static let historyCapture = "nyt-books/atj2097-lists-hardcover-fiction-2019-10-27.json"
    static let poolSources = [historyCapture, "nyt-books/seanredmond-lists-hardcover-fiction-2014-05-11.json"]
    /// The one list both recorded list shapes cover.
    static let capturedList = "hardcover-fiction"

    /// The upstream's answer to a list it does not have (its copyright year is the recording's, as is the double space).
    static let notFound = Data(
        #"{"status":"ERROR","copyright":"Copyright (c) 2023 The New York Times Company.  All Rights Reserved.","errors":["No list found for list name and/or date provided.","Not Found"],"results":[]}"#
            .utf8)

    let namesBody: Data
    /// `/lists/current/<list>.json` bodies by `list_name_encoded`.
    let current: [String: Data]
    /// `/lists.json?list=<list>` bodies by `list_name_encoded`.
    let history: [String: Data]
    /// `/lists/full-overview.json` and `/lists/overview.json`, composed from the lists above (``NYTOverview``).
    let overview: NYTOverview

    init(root: URL) throws {
        namesBody = try Data(contentsOf: root.appending(path: Self.names))
        let names = try FixtureCatalog.object(namesBody)
        let copyright = names["copyright"] as? String ?? ""
        var pool = try NYTBookPool(root: root, sources: Self.poolSources)
        var current: [String: Data] = [:], history: [String: Data] = [:]
        let lists = (names["results"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
        for list in lists {
            guard let encoded = list["list_name_encoded"] as? String else { continue }
            let dates = NYTListDates(list)
            if encoded == Self.capturedList {
                current[encoded] = try Data(contentsOf: root.appending(path: Self.currentCapture))
                history[encoded] = try Data(contentsOf: root.appending(path: Self.historyCapture))
                continue
            }
            let monthly = list["updated"] as? String == "MONTHLY"
            let books = pool.books(for: encoded, monthly: monthly)
            current[encoded] = try Self.encode(Self.currentList(list, books: books, dates: dates, copyright: copyright))
            history[encoded] = try Self.encode([
                "status": "OK", "copyright": copyright, "num_results": 0, "last_modified": dates.lastModified,
                "results": [Any](),
            ])
        }
        self.current = current
        self.history = history
        var listBooks: [String: [Any]] = [:]
        for (encoded, body) in current {
            let results = (try FixtureCatalog.object(body))["results"] as? [String: Any]
            listBooks[encoded] = results?["books"] as? [Any] ?? []
        }
        overview = try NYTOverview(names: lists, books: listBooks, copyright: copyright)
    }

    /// The current-list envelope around `books`, its names and dates from the names file's entry `list`.
    private static func currentList(_ list: [String: Any], books: [[String: Any]], dates: NYTListDates,
                                    copyright: String) -> [String: Any]
    {
        let results: [String: Any] = [
            "list_name": list["list_name"] ?? "", "list_name_encoded": list["list_name_encoded"] ?? "",
            "bestsellers_date": dates.bestsellers, "published_date": dates.published,
            "published_date_description": "latest", "next_published_date": "",
            "previous_published_date": dates.previous, "display_name": list["display_name"] ?? "",
            "normal_list_ends_at": books.count, "updated": list["updated"] ?? "WEEKLY", "books": books,
            "corrections": [Any](),
        ]
        return ["status": "OK", "copyright": copyright, "num_results": books.count,
                "last_modified": dates.lastModified, "results": results]
    }

    private static func encode(_ body: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: body, options: [.withoutEscapingSlashes])
    }

    // MARK: Answers

    func listNames() -> (Int, Data) { (200, namesBody) }

    /// `/lists/full-overview.json` (every book) or `/lists/overview.json` (the first five of each list).
    func overview(full: Bool) -> (Int, Data) {
        (200, full ? overview.full : overview.topFive)
    }

    func currentList(_ list: String) -> (Int, Data) {
        current[list].map { (200, $0) } ?? (404, Self.notFound)
    }

    /// `/lists.json`: without a known `list` there is nothing to answer, as upstream.
    func lists(_ list: String?) -> (Int, Data) {
        list.flatMap { history[$0] }.map { (200, $0) } ?? (404, Self.notFound)
    }
}

/// The dates of a synthesized list, derived from the names file's `newest_published_date` (the list's last
/// publication, which is what upstream's "current" returns even for lists that stopped years ago) with the offsets of
/// the recorded current list: best-seller week 15 days before publication, last modified 10 days before it.
struct NYTListDates {
    var published: String
    var bestsellers: String
    var previous: String
    var lastModified: String

    init(_ list: [String: Any]) {
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = TimeZone(secondsFromGMT: 0)
        day.dateFormat = "yyyy-MM-dd"
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let text = list["newest_published_date"] as? String ?? ""
        let date = day.date(from: text) ?? Date(timeIntervalSince1970: 0)
        func shifted(_ component: Calendar.Component, _ value: Int) -> Date {
            calendar.date(byAdding: component, value: value, to: date) ?? date
        }
        let monthly = list["updated"] as? String == "MONTHLY"
        published = day.string(from: date)
        bestsellers = day.string(from: shifted(.day, -15))
        previous = day.string(from: monthly ? shifted(.month, -1) : shifted(.day, -7))
        // Upstream writes New York time with its offset; a host without tz data gets the summer offset.
        let stamp = DateFormatter()
        stamp.locale = Locale(identifier: "en_US_POSIX")
        stamp.timeZone = TimeZone(identifier: "America/New_York") ?? TimeZone(secondsFromGMT: -4 * 3600)
        stamp.dateFormat = "yyyy-MM-dd'T'HH:mm:ssxxx"
        lastModified = stamp.string(from: shifted(.day, -10).addingTimeInterval(20 * 3600))
    }
}
