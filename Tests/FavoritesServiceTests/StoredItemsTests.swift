import Contracts
import EventStore
import Foundation
@testable import FavoritesService
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Postgres
import ServiceKit
import TestSupport
import Testing

/// Item copies stored once and served as stored: a list writes each favorite's stored item into its answer byte for
/// byte, and the favorites recorded before pictures were sized are sized once, in the view, by a migration.
@Suite(.serialized) struct StoredItemsTests {
    /// A stored item no decoder of this release would accept as it is (a field of another type, one it does not
    /// know, spacing of its own): a list that decoded and encoded it again would answer something else, or nothing.
    static let undecodable = #"{"id":  "SK-C-5", "experience":"rijksmuseum", "title":"Kept", "imageURL": 42, "z":[1, 2]}"#

    @Test func aListServesEachItemAsStored() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            #expect(try await api.call(.put, FavoritesAPITests.nightWatch, as: ana).status == .created)
            try await api.withPool { pool in
                try await pool.query("UPDATE favorites SET item = \(Self.undecodable)::json WHERE item_id = 'SK-C-5'")
            }
            let page = try await api.call(.get, "/v1/favorites?experience=rijksmuseum", as: ana)
            #expect(page.status == .ok)
            let body = String(buffer: page.body)
            #expect(body.hasPrefix(#"{"items":[{"item":"# + Self.undecodable + ","), "\(body)")
            // The rest of the answer is the page as the Contracts read it.
            let fields = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let items = try #require(fields?["items"] as? [[String: Any]])
            #expect(items.count == 1 && items.first?["version"] as? Int == 1 && items.first?["favoritedAt"] is String)
            #expect(items.first.map { Set($0.keys) } == ["item", "favoritedAt", "version"])  // nothing said twice
            #expect(fields?["version"] as? Int == 1)
        }
    }

    /// A favorite's answer carries the item bytes its write stored, as the list serves them, and a retry's answer
    /// (the item found kept) the same.
    @Test func aFavoritesAnswerCarriesItsItemAsStored() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            let first = try await api.call(.put, FavoritesAPITests.nightWatch, as: ana)
            let again = try await api.call(.put, FavoritesAPITests.nightWatch, as: ana)
            #expect(first.status == .created && again.status == .ok)
            let stored = try await api.withPool { pool in
                try await pool.query("SELECT item::text AS item FROM favorites").rows.first?
                    .decode(String.self, column: "item")
            }
            for answer in [String(buffer: first.body), String(buffer: again.body)] {
                #expect(answer.hasPrefix(#"{"item":"# + (stored ?? "none") + ","), "\(answer)")
                let favorite = try ServiceJSON.decoder.decode(Favorite.self, from: Data(answer.utf8))
                #expect(favorite.item.id == "SK-C-5" && favorite.version == 1)
            }
        }
    }

    /// The changes feed and the change stream carry an added favorite's item as its event recorded it; a picture
    /// recorded at its original size is set to a cell's in place, the rest of the bytes as they are.
    @Test func aChangeServesItsItemAsRecorded() async throws {
        try await FavoritesHarness.run { api in
            let ana = try await api.user()
            #expect(try await api.call(.put, FavoritesAPITests.nightWatch, as: ana).status == .created)
            let google = "https://lh3.googleusercontent.com/01vnwH71IfMYDsosPltpROvWfEDy"
            let recorded = #"{"id":  "RP-P-1", "experience":"rijksmuseum", "title":"Kept", "imageURL":"\#(google)=s0", "z":[1, {"a": "}"}]}"#
            let served = recorded.replacingOccurrences(of: "=s0", with: "=s400")
            try await api.withPool { pool in
                let data = #"{"experience":"rijksmuseum","itemId":"RP-P-1","title":"Kept","item":"# + recorded + "}"
                try await pool.query("""
                    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
                    VALUES (\(FavoritesStore.stream(of: ana.id)), 2, \(UUID()), 'favorite-added', 1, \(data)::json,
                            '{}'::json)
                    """)
            }
            let feed = try await api.call(.get, "/v1/favorites/changes?since=1", as: ana)
            #expect(feed.status == .ok)
            let body = String(buffer: feed.body)
            #expect(body.hasPrefix(#"{"changes":[{"favorite":{"item":"# + served + ","), "\(body)")
            let changes = try ServiceJSON.decoder.decode(FavoriteChanges.self, from: Data(body.utf8))
            #expect(changes.changes.map(\.itemId) == ["RP-P-1"] && changes.version == 2)
            #expect(changes.changes.first?.favorite?.item.imageURL == google + "=s400")
            #expect(changes.changes.first?.favorite?.version == 2)
            let everything = try await api.call(.get, "/v1/favorites/changes?since=0", as: ana)
                .decode(FavoriteChanges.self)
            #expect(everything.changes.first?.favorite?.item.id == "SK-C-5")
        }
    }

    /// A member's value is found in an object's text whatever it holds (strings with braces and escapes, nesting).
    @Test func aMembersValueIsFoundInTheText() {
        let text = Array(#"{"a": "x}\"y", "b" :{"c":[1,{"d":"]"}]} , "n":-1.5e3,"item":{"k":true}}"#.utf8)
        func value(_ key: String) -> String? {
            JSONText.valueRange(of: key, in: text).map { String(decoding: text[$0], as: UTF8.self) }
        }
        #expect(value("a") == #""x}\"y""#)
        #expect(value("b") == #"{"c":[1,{"d":"]"}]}"#)
        #expect(value("n") == "-1.5e3")
        #expect(value("item") == #"{"k":true}"#)
        #expect(value("c") == nil && value("missing") == nil)
        #expect(JSONText.valueRange(of: "a", in: Array("[1]".utf8)) == nil)
    }

    /// A page of favorites as stored reads back as the Contracts' `FavoritePage`, items and cursor included.
    @Test func aStoredPageReadsAsAFavoritePage() throws {
        let item = CatalogItem(id: "SK-C-5", experience: .rijksmuseum, title: "The Night Watch",
                               imageURL: "https://lh3.googleusercontent.com/abc=s400")
        let favorite = Favorite(item: item, favoritedAt: Date(timeIntervalSince1970: 1_700_000_000), version: 3)
        let stored = StoredFavorite(item: String(decoding: try ServiceJSON.encoder.encode(item), as: UTF8.self),
                                    favoritedAt: favorite.favoritedAt, version: favorite.version)
        for cursor in [nil, "next\"page"] {
            let data = try StoredJSON.page(StoredFavoritePage(items: [stored, stored], nextCursor: cursor, version: 7))
            #expect(try ServiceJSON.decoder.decode(FavoritePage.self, from: data)
                == FavoritePage(items: [favorite, favorite], nextCursor: cursor, version: 7))
        }
    }

    /// A favorite's time is written as the Contracts' encoder writes it, whatever the date.
    @Test(arguments: [0, 1_700_000_000, 1_700_000_000.999, 951_782_400, 4_102_444_799.5])
    func aStoredFavoritesTimeIsWrittenAsTheEncoderWritesIt(_ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let encoded = String(decoding: try ServiceJSON.encoder.encode([date]), as: UTF8.self)
        #expect(encoded == "[\"\(StoredJSON.timestamp(date))\"]")
    }

    /// Favorites recorded before the catalog sized the museum's pictures (Google-hosted `=s0`, IIIF `full/max`) are
    /// sized in the view once, as `SizedImage.cell` does; their events keep what the catalog answered then, and a
    /// rebuild from them sizes them alike. The log's streams go on where they were.
    @Test func migratingSizesRecordedPicturesAndKeepsTheLog() async throws {
        let google = "https://lh3.googleusercontent.com/01vnwH71IfMYDsosPltpROvWfEDy"
        let iiif = "https://iiif.micr.io/PJEZO/full/max/0/default.jpg"
        let before = Migrator(schema: "favorites", migrations: Array(FavoritesMigrations.all.prefix(11)))
        try await withTestPool(migrators: [before], searchPath: "favorites") { pool, _ in
            let user = UUID()
            let stream = FavoritesStore.stream(of: user)
            for (version, (itemId, picture)) in [("RP-P-1", google + "=s0"), ("SK-C-5", iiif)].enumerated() {
                let item = CatalogItem(id: itemId, experience: .rijksmuseum, title: "Artwork \(itemId)",
                                       imageURL: picture)
                let snapshot = FavoriteSnapshot(item: item)
                let data = String(decoding: try ServiceJSON.encoder.encode(snapshot), as: UTF8.self)
                try await pool.query("""
                    INSERT INTO events (stream_id, version, event_id, event_type, schema_version, data, metadata)
                    VALUES (\(stream), \(version + 1), \(UUID()), 'favorite-added', 1, \(data)::jsonb, '{}'::jsonb)
                    """)
                try await pool.query("""
                    INSERT INTO favorites (user_id, experience, item_id, title, image_url, favorited_at, version, item)
                    SELECT \(user), 'rijksmuseum', \(itemId), \(snapshot.title), \(picture), recorded_at, version,
                           \(PostgresJSON(item))::jsonb
                      FROM events WHERE stream_id = \(stream) AND version = \(version + 1)
                    """)
            }
            try await pool.query("INSERT INTO event_streams VALUES (\(stream), 2)")
            _ = try await Migrator(schema: "favorites", migrations: FavoritesMigrations.all).migrate(pool)

            let pictures = try await pool.query("""
                SELECT image_url, item->>'imageURL' AS item_image_url FROM favorites ORDER BY item_id
                """).rows.map { (try $0.decode(String.self, column: "image_url"),
                                 try $0.decode(String.self, column: "item_image_url")) }
            #expect(pictures.map(\.0) == [google + "=s400", "https://iiif.micr.io/PJEZO/full/400,/0/default.jpg"])
            #expect(pictures.map(\.1) == pictures.map(\.0))
            #expect(pictures.map(\.0) == [google + "=s0", iiif].map(SizedImage.cell))
            let events = try await EventStore.read(stream, pool: pool)
            #expect(events.first?.data.contains("=s0") == true)  // the log is as it was
            #expect(try await pool.withSession { try await EventStore.version(of: stream, on: $0) } == 2)
            #expect(try await pool.query("SELECT to_regclass('event_streams') IS NULL").scalar(Bool.self))

            // A rebuild from the log gives the sized pictures too.
            func viewRows() async throws -> [(String, String)] {
                try await pool.query("SELECT image_url, item::jsonb::text AS item FROM favorites ORDER BY item_id")
                    .rows.map { row in
                        (try row.decode(String.self, column: "image_url"), try row.decode(String.self, column: "item"))
                    }
            }
            let live = try await viewRows()
            _ = try await FavoritesView.repair(user: user, pool: pool)
            let rebuilt = try await viewRows()
            #expect(rebuilt.map(\.0) == live.map(\.0) && rebuilt.map(\.1) == live.map(\.1))
        }
    }
}
