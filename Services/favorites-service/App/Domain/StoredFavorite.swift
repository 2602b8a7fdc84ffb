import Contracts
import EventStore
import Foundation

/// A favorite as the view keeps it: its fields (``favorite``, without its item) and its item's JSON as stored, which
/// an answer carries as it is, never decoded and encoded again (a list of five would otherwise parse and print five
/// ~1 KB copies on every read).
struct StoredFavorite: Sendable, Equatable {
    /// Every field but `item` (nil).
    var favorite: Favorite
    /// The item's JSON text, as written (`favorites.item`).
    var item: String
}

/// A page of the list as stored (see ``StoredFavorite``): what `FavoritePage` holds, the items kept as stored.
struct StoredFavoritePage: Sendable, Equatable {
    var items: [StoredFavorite]
    var nextCursor: String?
    var version: Int64
}

/// A change as the changes feed and the change stream send it: an added favorite's item is the one its event
/// recorded, as recorded (only its picture set to a cell's size, in place, when recorded at another), never decoded.
struct StoredChange: Sendable, Equatable {
    /// The change; its favorite, if any, without its item (nil).
    var change: FavoriteChange
    /// The added favorite's item JSON.
    var item: String?

    /// The change `event` made; nil where ``FavoriteChange/init(_:)`` is nil.
    init?(_ event: RecordedEvent) {
        let bytes = Array(event.data.utf8)
        let recorded = JSONText.valueRange(of: "item", in: bytes).flatMap { range in
            bytes[range].first == UInt8(ascii: "{") ? range : nil
        }
        var lean = event
        if let recorded {  // the rest decoded without the item
            lean.data = String(decoding: bytes[..<recorded.lowerBound] + Array("null".utf8) + bytes[recorded.upperBound...],
                               as: UTF8.self)
        }
        guard var change = FavoriteChange(lean) else { return nil }
        if let favorite = change.favorite {
            // An event recorded before items were kept: the item its fields say (``FavoriteSnapshot/cellItem``).
            item = recorded.map { Self.cellSized(Array(bytes[$0])) }
                ?? favorite.item.flatMap { try? Self.encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) }
            change.favorite?.item = nil
        } else {
            item = nil
        }
        self.change = change
    }

    init(change: FavoriteChange, item: String?) {
        self.change = change
        self.item = item
    }

    /// `item` with its picture at a cell's size (``FavoriteSnapshot/sized``): only the URL's bytes change.
    static func cellSized(_ item: [UInt8]) -> String {
        guard let range = JSONText.valueRange(of: "imageURL", in: item),
              let url = try? JSONDecoder().decode(String.self, from: Data(item[range])),
              case let sized = SizedImage.cell(url), sized != url, let text = try? encoder.encode(sized)
        else { return String(decoding: item, as: UTF8.self) }
        return String(decoding: item[..<range.lowerBound] + Array(text) + item[range.upperBound...], as: UTF8.self)
    }

    /// As the event store writes items (sorted keys, ISO 8601 dates).
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
}
