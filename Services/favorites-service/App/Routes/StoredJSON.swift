import Contracts
import Foundation
import ServiceKit

/// Answers that carry items as stored (``StoredFavorite``): each favorite's other fields are encoded as usual, and
/// its item's stored JSON is written in beside them, byte for byte. The answers read as the Contracts types do
/// (`Favorite`, `FavoritePage`); only the order of keys differs (`item` first).
enum StoredJSON {
    /// A favorite: `{"item":<stored>,` and the rest of its encoded fields.
    static func favorite(_ stored: StoredFavorite, into bytes: inout [UInt8]) throws {
        var fields = try ServiceJSON.encoder.encode(stored.favorite)  // `item` is nil: absent
        guard fields.first == UInt8(ascii: "{") else { throw Malformed() }
        fields.removeFirst()
        bytes += Array(#"{"item":"#.utf8)
        bytes += Array(stored.item.utf8)
        if fields.first != UInt8(ascii: "}") { bytes.append(UInt8(ascii: ",")) }
        bytes += fields
    }

    /// A page: `FavoritePage`'s fields, its items as ``favorite(_:into:)`` writes them.
    static func page(_ page: StoredFavoritePage) throws -> Data {
        // Sorted keys put `items` first: `{"items":[]` and the rest.
        let empty = FavoritePage(items: [], nextCursor: page.nextCursor, version: page.version)
        let rest = try ServiceJSON.encoder.encode(empty)
        let head = Array(#"{"items":[]"#.utf8)
        guard rest.starts(with: head) else { throw Malformed() }
        var bytes = Array(#"{"items":["#.utf8)
        bytes.reserveCapacity(rest.count + page.items.reduce(0) { $0 + $1.item.utf8.count + 512 })
        for (index, stored) in page.items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            try favorite(stored, into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        bytes += rest.dropFirst(head.count)
        return Data(bytes)
    }

    /// The encoder wrote something other than an object (it never does).
    struct Malformed: Error {}
}
