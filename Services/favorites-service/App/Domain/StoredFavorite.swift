import Contracts
import EventStore
import Foundation

/// A favorite (``Favorite``) as the view keeps it: its item's JSON as stored, which an answer carries as it is, never
/// decoded and encoded again (a list of five would otherwise parse and print five ~1 KB copies on every read), and
/// its other fields.
struct StoredFavorite: Sendable, Equatable {
    /// The item's JSON text, as written (`favorites.item`).
    var item: String
    var favoritedAt: Date
    var version: Int64
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
    /// The change, without its favorite.
    var change: FavoriteChange
    /// The added favorite, its item as recorded.
    var favorite: StoredFavorite?

    /// The change `event` made; nil where ``FavoriteChange/init(_:)`` is nil.
    init?(_ event: RecordedEvent) {
        let bytes = Array(event.data.utf8)
        let recorded = JSONText.valueRange(of: "item", in: bytes).flatMap { range in
            bytes[range].first == UInt8(ascii: "{") ? range : nil
        }
        var lean = event
        if let recorded {  // the rest decoded without the item
            lean.data = JSONText.nulling(recorded, in: bytes)
        }
        guard var change = FavoriteChange(lean) else { return nil }
        favorite = try? change.favorite.map { favorite in
            // An event recorded before items were kept: the item its fields say (``FavoriteSnapshot/cellItem``).
            let item = try recorded.map { range in
                let sized = Self.cellSized(Array(bytes[range]))
                return event.type == FavoriteEvent.cardWrittenType ? Self.writtenByUser(sized) : sized
            } ?? String(decoding: try Self.encoder.encode(favorite.item), as: UTF8.self)
            return StoredFavorite(item: item, favoritedAt: favorite.favoritedAt, version: favorite.version)
        }
        change.favorite = nil
        self.change = change
    }

    /// A written card's `item`, saying the user wrote it (``CardFacts/writtenByUser``): a card recorded before items
    /// said so gets the member in place, before its card's closing brace, the rest of the bytes as they are.
    static func writtenByUser(_ item: String) -> String {
        let bytes = Array(item.utf8)
        guard let card = JSONText.valueRange(of: "card", in: bytes), bytes[card].first == UInt8(ascii: "{"),
              JSONText.valueRange(of: "writtenByUser", in: Array(bytes[card])) == nil
        else { return item }
        let closing = card.upperBound - 1  // a card has its facts: the member goes after them
        return String(decoding: bytes[..<closing] + Array(#","writtenByUser":true"#.utf8) + bytes[closing...],
                      as: UTF8.self)
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
