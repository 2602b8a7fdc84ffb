import Contracts
import Foundation
import ServiceKit

/// Answers that carry items as stored (``StoredFavorite``): each favorite's other fields are encoded as usual, and
/// its item's stored JSON is written in beside them, byte for byte. The answers read as the Contracts types do
/// (`Favorite`, `FavoritePage`); only the order of keys differs (`item` first).
enum StoredJSON {
    /// A favorite: `{"item":<stored>,"favoritedAt":…,"version":…}`, its other fields as `Favorite` encodes them (keys
    /// sorted, the date as ISO 8601 in whole seconds), written directly: a list writes one per item.
    static func favorite(_ stored: StoredFavorite, into bytes: inout [UInt8]) {
        bytes += #"{"item":"#.utf8
        bytes += stored.item.utf8
        bytes += #","favoritedAt":""#.utf8
        bytes += timestamp(stored.favoritedAt).utf8
        bytes += #"","version":"#.utf8
        bytes += String(stored.version).utf8
        bytes.append(UInt8(ascii: "}"))
    }

    /// One favorite (a PUT's answer).
    static func favorite(_ stored: StoredFavorite) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(stored.item.utf8.count + 64)
        favorite(stored, into: &bytes)
        return Data(bytes)
    }

    /// `date` as ``ServiceJSON``'s encoder writes it: `2026-11-23T09:14:05Z`, in UTC, the fraction of a second dropped.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(parts.tm_year + 1900)
        return year + "-" + two(parts.tm_mon + 1) + "-" + two(parts.tm_mday) + "T" + two(parts.tm_hour) + ":"
            + two(parts.tm_min) + ":" + two(parts.tm_sec) + "Z"
    }

    /// A page: `FavoritePage`'s fields, its items as ``favorite(_:into:)`` writes them.
    static func page(_ page: StoredFavoritePage) throws -> Data {
        let rest = try ServiceJSON.encoder.encode(FavoritePage(items: [], nextCursor: page.nextCursor,
                                                               version: page.version))
        return try array(page.items, named: "items", around: rest) { favorite($0, into: &$1) }
    }

    /// A change: `{"favorite":<favorite as above>,` and the rest of its encoded fields, or the change as encoded.
    static func change(_ stored: StoredChange, into bytes: inout [UInt8]) throws {
        guard let favorite = stored.favorite else {
            bytes += try ServiceJSON.encoder.encode(stored.change)
            return
        }
        var fields = try ServiceJSON.encoder.encode(stored.change)  // its `favorite` is nil: absent
        guard fields.first == UInt8(ascii: "{") else { throw Malformed() }
        fields.removeFirst()
        bytes += Array(#"{"favorite":"#.utf8)
        Self.favorite(favorite, into: &bytes)
        if fields.first != UInt8(ascii: "}") { bytes.append(UInt8(ascii: ",")) }
        bytes += fields
    }

    /// One change (a change stream's event).
    static func change(_ stored: StoredChange) throws -> String {
        var bytes: [UInt8] = []
        try change(stored, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The changes feed: `FavoriteChanges`' fields, its changes as ``change(_:into:)`` writes them.
    static func changes(_ changes: [StoredChange], version: Int64, hasMore: Bool) throws -> Data {
        let rest = try ServiceJSON.encoder.encode(FavoriteChanges(changes: [], version: version, hasMore: hasMore))
        return try array(changes, named: "changes", around: rest) { try change($0, into: &$1) }
    }

    /// `rest` (an object whose first member, in sorted order, is the empty array `name`) with `elements` in that array.
    private static func array<Element>(_ elements: [Element], named name: String, around rest: Data,
                                       writing write: (Element, inout [UInt8]) throws -> Void) throws -> Data {
        let head = Array("{\"\(name)\":[]".utf8)
        guard rest.starts(with: head) else { throw Malformed() }
        var bytes = Array(head.dropLast())
        bytes.reserveCapacity(rest.count + elements.count * 2048)
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            try write(element, &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        bytes += rest.dropFirst(head.count)
        return Data(bytes)
    }

    /// The encoder wrote something other than an object (it never does).
    struct Malformed: Error {}
}
