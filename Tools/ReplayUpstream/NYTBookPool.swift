import Foundation

/// The books the synthesized NYT lists are made of: every entry of the recorded `/lists.json` bodies, converted to the
/// `books[]` entry of the current-list shape, and a stable, different selection of them per list.
///
/// Selection: a 64-bit FNV-1a hash of `list_name_encoded` picks a start in the pool, a step coprime to the pool's
/// size (so a list never holds a book twice) and a length of 10 to 15; a list whose start and step an earlier list of
/// the names file already took moves on to the next free start. Two lists therefore never open with the same run of
/// books, and every list keeps its selection across runs and machines. Ranks are renumbered 1…n.
struct NYTBookPool {
    /// Converted entries, rank not yet set, in the sources' order; the first recording of an ISBN-13 wins.
    private(set) var books: [[String: Any]] = []
    private var taken: Set<[Int]> = []

    init(root: URL, sources: [String]) throws {
        var seen: Set<String> = []
        for source in sources {
            let body = try FixtureCatalog.object(try Data(contentsOf: root.appending(path: source)))
            for case let entry as [String: Any] in body["results"] as? [Any] ?? [] {
                guard let book = Self.book(entry) else { continue }
                let isbn = book["primary_isbn13"] as? String ?? ""
                guard isbn.isEmpty || seen.insert(isbn).inserted else { continue }
                books.append(book)
            }
        }
    }

    /// The selection for `list`, ranked. A monthly list's entries carry `weeks_on_list` and `rank_last_week` 0, as
    /// upstream's monthly lists do.
    mutating func books(for list: String, monthly: Bool) -> [[String: Any]] {
        guard !books.isEmpty else { return [] }
        let steps = (1..<max(books.count, 2)).filter { Self.gcd($0, books.count) == 1 }
        let hash = Self.hash(list)
        var start = Int(hash % UInt64(books.count))
        let step = steps[Int((hash >> 16) % UInt64(steps.count))]
        let count = min(10 + Int((hash >> 32) % 6), books.count)
        var tries = 0
        while taken.contains([start, step]), tries < books.count {
            start = (start + 1) % books.count
            tries += 1
        }
        taken.insert([start, step])
        return (0..<count).map { index in
            var book = books[(start + index * step) % books.count]
            book["rank"] = index + 1
            if monthly {
                book["weeks_on_list"] = 0
                book["rank_last_week"] = 0
            }
            return book
        }
    }

    /// A `/lists.json` result (`book_details[0]`, `reviews[0]`, `isbns`, …) as a current-list `books[]` entry. Values
    /// keep their recorded types (`price` stays the number it was). What the source lacks stays empty the way upstream
    /// leaves it: `""` for links, `[]` for lists, null for `book_image` and `book_uri` (no recording has one to give).
    private static func book(_ entry: [String: Any]) -> [String: Any]? {
        guard let details = (entry["book_details"] as? [Any])?.first as? [String: Any] else { return nil }
        let review = (entry["reviews"] as? [Any])?.first as? [String: Any] ?? [:]
        let amazon = entry["amazon_product_url"] as? String ?? ""
        let buyLinks: [[String: String]] = amazon.isEmpty ? [] : [["name": "Amazon", "url": amazon]]
        let image: Any = details["book_image"] ?? NSNull()
        var book: [String: Any] = [
            "amazon_product_url": amazon, "book_image": image, "book_uri": NSNull(), "buy_links": buyLinks,
        ]
        for key in ["rank_last_week", "weeks_on_list", "asterisk", "dagger"] { book[key] = entry[key] ?? 0 }
        book["isbns"] = entry["isbns"] ?? [Any]()
        for key in ["primary_isbn10", "primary_isbn13", "publisher", "description", "title", "author", "contributor",
                    "contributor_note", "age_group"]
        {
            book[key] = details[key] ?? ""
        }
        book["price"] = details["price"] ?? 0
        for key in ["book_review_link", "first_chapter_link", "sunday_review_link", "article_chapter_link"] {
            book[key] = review[key] ?? ""
        }
        return book
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// FNV-1a, 64 bits: unlike `Hasher`, the same on every run.
    private static func hash(_ key: String) -> UInt64 {
        key.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
