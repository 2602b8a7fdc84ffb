import Contracts
import Foundation

/// Where a page of search results starts, its size (so the next page lines up with the previous one whatever `limit`
/// the client sends with it), and the search it continues. Clients see it only as the opaque `cursor` / `nextCursor`.
///
/// Sources page in two ways: by page number (Ticketmaster: `page`), or by the upstream's own opaque token with our
/// offset into the page it names (the Rijksmuseum's `pageToken`, 100 ids a page, served in smaller pages), in one of
/// several searches a source runs one after the other (`phase`).
struct PageCursor: Codable, Sendable, Equatable, Hashable {
    var pageSize: Int
    var page = 0
    var phase = 0
    var token: String?
    var offset = 0
    /// The ``SearchQuery/fingerprint(in:)`` of the search whose next page this is: sent with another `q`, `category`
    /// or `sort`, the cursor is refused, never answered with a page of another search. Nil on a first page.
    var search: String?

    enum CodingKeys: String, CodingKey {
        case pageSize = "s", page = "p", phase = "f", token = "t", offset = "o", search = "q"
    }

    init(pageSize: Int, page: Int = 0, phase: Int = 0, token: String? = nil, offset: Int = 0) {
        self.pageSize = pageSize
        self.page = page
        self.phase = phase
        self.token = token
        self.offset = offset
    }

    /// The cursor a client passes back; the same page always gets the same text.
    var encoded: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding five plain fields cannot fail.
        return ((try? encoder.encode(self)) ?? Data()).base64URLEncodedString()
    }

    /// Reads a cursor this API returned; nil for anything else (bounded in length before it is decoded).
    init?(_ text: String) {
        guard text.utf8.count <= Self.maximumLength, let data = Data(base64URLEncoded: text),
              let cursor = try? JSONDecoder().decode(PageCursor.self, from: data),
              cursor.pageSize >= 1, cursor.page >= 0, cursor.phase >= 0, cursor.offset >= 0,
              (cursor.token?.utf8.count ?? 0) <= Self.maximumTokenLength, (cursor.search?.utf8.count ?? 0) <= 16
        else { return nil }
        self = cursor
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        pageSize = try container.decode(Int.self, forKey: .pageSize)
        page = try container.decodeIfPresent(Int.self, forKey: .page) ?? 0
        phase = try container.decodeIfPresent(Int.self, forKey: .phase) ?? 0
        token = try container.decodeIfPresent(String.self, forKey: .token)
        offset = try container.decodeIfPresent(Int.self, forKey: .offset) ?? 0
        search = try container.decodeIfPresent(String.self, forKey: .search)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(pageSize, forKey: .pageSize)
        if page != 0 { try container.encode(page, forKey: .page) }
        if phase != 0 { try container.encode(phase, forKey: .phase) }
        try container.encodeIfPresent(token, forKey: .token)
        if offset != 0 { try container.encode(offset, forKey: .offset) }
        try container.encodeIfPresent(search, forKey: .search)
    }

    /// This cursor, as the continuation of the search whose fingerprint is `search`.
    func continuing(_ search: String) -> PageCursor {
        var cursor = self
        cursor.search = search
        return cursor
    }

    /// An upstream token longer than this is not one we would pass on.
    static let maximumTokenLength = 256
    static let maximumLength = 512

    /// A key for this page in caches: every field, none of them able to contain the separator unescaped.
    var cacheKey: String {
        "\(pageSize)|\(page)|\(phase)|\(offset)|\(token?.percentEncodedForKey ?? "")"
    }
}

extension String {
    fileprivate var percentEncodedForKey: String {
        addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? self
    }
}
