import Contracts
import EventStore
import Foundation
@testable import FavoritesService
import Postgres
import Testing

/// bench/sql/toggle-service.sql is what pgbench runs as "the service's statements" beside the lean reference
/// (bench/peers.sh): it must be the statements a toggle sends, or the ratio measures a copy. It is rendered here from
/// ``FavoritesWriteStatements`` with each bound value replaced by the pgbench expression that stands for it, and this
/// test fails when the file differs. `FAVORITEME_WRITE_DOCS=1 scripts/test --filter BenchStatementsTests` rewrites it.
@Suite struct BenchStatementsTests {
    static let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "bench/sql/toggle-service.sql")

    @Test func pgbenchRunsTheStatementsOfAToggle() throws {
        let rendered = try Self.toggle()
        if ProcessInfo.processInfo.environment["FAVORITEME_WRITE_DOCS"] == "1" {
            try rendered.write(to: Self.script, atomically: true, encoding: .utf8)
        }
        let kept = try String(contentsOf: Self.script, encoding: .utf8)
        #expect(kept == rendered, "bench/sql/toggle-service.sql is not what the service sends; rewrite it (see above)")
    }

    /// Each bound value rendered as a pgbench expression: the sentinel values below stand for pgbench's variables
    /// (`:u` the user, `:i` the item, `:r` the request, and the -D values bench/tool.py's toggle_values gives).
    @Test func everyBoundValueBecomesAnExpression() throws {
        let statement: SQL = "SELECT \(Self.user)::uuid, \(Self.itemId)::text, \(Optional<String>.none)::text, \(5000)"
        #expect(Self.pgbench(statement, try Self.expressions()) == "SELECT md5('bench-' || :u)::uuid, ('item-' || :i)::text, NULL::text, '5000'")
    }

    static let user = UUID(uuidString: "00000000-0000-4000-8000-00000000b0b0")!
    static let event = UUID(uuidString: "00000000-0000-4000-8000-00000000e0e0")!
    static let now = Date(timeIntervalSince1970: 1_700_000_000)
    static let itemId = "ITEM"
    /// The fields bench/tool.py gives as -D values, each a sentinel no other bound value spells.
    static let item = CatalogItem(id: itemId, experience: .ticketmaster, title: "TITLE", subtitle: "SUBTITLE",
                                  imageURL: "IMAGEURL",
                                  event: EventFacts(localDate: "LOCALDATE", localTime: "LOCALTIME", startsAt: nil,
                                                    timeZone: nil, dateTBA: false, dateTBD: false, timeTBA: false,
                                                    noSpecificTime: false, status: nil, venue: nil,
                                                    priceRanges: [.init(type: nil, currency: nil, min: 12345.5,
                                                                        max: nil)],
                                                    ticketURL: nil, info: nil))

    /// What stands for each sentinel's bound text.
    static func expressions() throws -> [String: String] {
        let snapshot = FavoriteSnapshot(item: item)
        let stream = FavoritesStore.stream(of: user)
        return [
            user.postgresText: "md5('bench-' || :u)",
            stream: "('user-' || md5('bench-' || :u)::uuid)",
            event.postgresText: "md5(:u || '-' || :r)",
            itemId: "('item-' || :i)",
            now.postgresText: "now()",
            "TITLE": ":title", "SUBTITLE": "nullif(:subtitle, '')", "IMAGEURL": "nullif(:imageURL, '')",
            "LOCALDATE": "nullif(:localDate, '')", "LOCALTIME": "nullif(:localTime, '')",
            12345.5.postgresText: "nullif(:price, '')",
            try NewEvent(id: event, type: "", data: snapshot, metadata: EventMetadata()).data:
                "replace(:snapshot, 'ITEM', 'item-' || :i)",
            PostgresJSON(try #require(snapshot.item)).postgresText: "replace(:item, 'ITEM', 'item-' || :i)",
        ]
    }

    /// The statement's text with each `$n` replaced: by its expression, NULL, or the value quoted as a literal.
    static func pgbench(_ statement: SQL, _ expressions: [String: String]) -> String {
        var text = ""
        var rest = statement.text[...]
        while let dollar = rest.firstIndex(of: "$") {
            text += rest[..<dollar]
            let digits = rest[rest.index(after: dollar)...].prefix(while: { $0.isASCII && $0.isNumber })
            let value = statement.parameters[Int(digits)! - 1]
            text += value.map { expressions[$0] ?? "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }
                ?? "NULL"
            rest = rest[rest.index(dollar, offsetBy: 1 + digits.count)...]
        }
        return text + rest
    }

    /// A toggle as bench/wrk.lua and the client library send it: a keyed favorite (its first, uncounted send), then a
    /// keyed unfavorite, each in the writer's pipeline.
    static func toggle() throws -> String {
        let expressions = try expressions()
        let request = WriteRequest(user: user, eventID: event, id: event, requestID: "00000000-0000-0000-0000-000000000000")
        let write = FavoritesWriteStatements.Write(request, at: now)
        let favorite = FavoritesWriteStatements.favorite(try .init(FavoriteSnapshot(item: item)), as: FavoriteEvent.addedType,
                                                             write, freeTitle: nil, maximum: 5000, counted: false)
        let unfavorite = FavoritesWriteStatements.unfavorite(itemId, of: .ticketmaster, write)
        let pipeline = { (statement: SQL) in
            (["\\set r random(1, 4000000000000000000)", "\\startpipeline", "BEGIN;"]
                + [FavoritesWriteStatements.locks([write.stream]), statement].map { pgbench($0, expressions) + ";" }
                + ["COMMIT;", "\\endpipeline"]).joined(separator: "\n")
        }
        return header + [pipeline(favorite), pipeline(unfavorite)].joined(separator: "\n") + "\n"
    }

    static let header = """
        -- pgbench: favorites-service's own statements for a favorite toggle, rendered from FavoritesWriteStatements by
        -- Tests/FavoritesServiceTests/BenchStatementsTests.swift (which fails when this file differs): a keyed favorite
        -- (its first, uncounted send), then a keyed unfavorite, each in the writer's one pipeline. The values the
        -- service binds are bound here too (pgbench -M prepared; -D values from bench/tool.py's toggle_values).
        \\set u random(1, :users)
        \\set i random(1, 5)

        """
}
