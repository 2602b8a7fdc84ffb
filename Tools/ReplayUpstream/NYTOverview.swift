import Foundation

/// `GET /svc/books/v3/lists/full-overview.json` and `…/lists/overview.json` as the replay answers them: every list
/// published on the current date with its books, in one body. No recording of either exists, so the body is composed,
/// in the shape the NYT's specification documents (`{status, copyright, num_results, results: {bestsellers_date,
/// published_date, published_date_description, previous_published_date, next_published_date, lists: [{list_name,
/// list_name_encoded, display_name, updated, list_image…, books}]}}`), from what the replay serves already:
///
/// - the lists are those of the names file published on its latest date (its weekly lists whose
///   `newest_published_date` is the latest one, 2023-04-02) and its monthly lists published in the month before
///   (2023-03-12): 18 of 59, as the NYT's overview carries the lists of the week, not the retired ones;
/// - each list's books are the `books` of the replay's `/lists/current/<list>.json` body: the recorded hardcover
///   fiction capture, the other lists built from the recorded books (``NYTBookPool``); the full overview has them
///   all, the overview the first five;
/// - `list_id` is left out and `list_image` is null (no recording has either); the dates are those of the names file's
///   latest date, derived as ``NYTListDates`` derives a list's.
///
/// The `published_date` parameter is not honoured: the replay has one date.
struct NYTOverview: Sendable {
    let full: Data
    let topFive: Data

    /// How many days before the latest date a monthly list may have been published and still be current.
    static let monthlyReach = 31

    /// `names`: the names file's `results` in order; `books`: each list's `books` by `list_name_encoded`.
    init(names: [[String: Any]], books: [String: [Any]], copyright: String) throws {
        let latest = names.compactMap { $0["newest_published_date"] as? String }.max() ?? ""
        let current = names.filter { Self.isCurrent($0, latest: latest) }
        let dates = NYTListDates(current.first { $0["updated"] as? String != "MONTHLY" } ?? [:])
        func body(booksPerList limit: Int?) throws -> Data {
            var total = 0
            let lists: [[String: Any]] = current.map { list in
                let encoded = list["list_name_encoded"] as? String ?? ""
                let all = books[encoded] ?? []
                let kept = limit.map { Array(all.prefix($0)) } ?? all
                total += kept.count
                return [
                    "list_name": list["list_name"] ?? "", "list_name_encoded": encoded,
                    "display_name": list["display_name"] ?? "", "updated": list["updated"] ?? "WEEKLY",
                    "list_image": NSNull(), "list_image_width": NSNull(), "list_image_height": NSNull(),
                    "books": kept,
                ]
            }
            let results: [String: Any] = [
                "bestsellers_date": dates.bestsellers, "published_date": dates.published,
                "published_date_description": "latest", "previous_published_date": dates.previous,
                "next_published_date": "", "lists": lists,
            ]
            return try JSONSerialization.data(
                withJSONObject: ["status": "OK", "copyright": copyright, "num_results": total, "results": results],
                options: [.withoutEscapingSlashes])
        }
        full = try body(booksPerList: nil)
        topFive = try body(booksPerList: 5)
    }

    /// A weekly list published on the latest date, or a monthly one published in the month before it.
    static func isCurrent(_ list: [String: Any], latest: String) -> Bool {
        guard let published = list["newest_published_date"] as? String else { return false }
        guard list["updated"] as? String == "MONTHLY" else { return published == latest }
        return published <= latest && daysBetween(published, latest).map { $0 <= monthlyReach } == true
    }

    private static func daysBetween(_ earlier: String, _ later: String) -> Int? {
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = TimeZone(secondsFromGMT: 0)
        day.dateFormat = "yyyy-MM-dd"
        guard let from = day.date(from: earlier), let to = day.date(from: later) else { return nil }
        return Int(to.timeIntervalSince(from) / 86_400)
    }
}
