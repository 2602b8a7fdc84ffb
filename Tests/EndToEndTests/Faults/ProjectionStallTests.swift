import Contracts
import Foundation
import Logging
import NIOHTTP1
import Postgres
import TestSupport
import Testing

extension FaultInjection {
    /// A transaction left open (a report, a stuck migration) holds back the database's snapshot horizon. The async
    /// "most favorited" projection must not read past an event that might still be followed by an earlier one, so it
    /// stalls, and says so (`projection_lag_events` rises); when the transaction ends it catches up, with every event
    /// applied exactly once: its copy of who favorited what then equals the favorites view, row for row.
    @Suite struct ProjectionStallTests {
        @Test func aLongTransactionStallsTheProjectionWhichThenCatchesUpWithoutSkipping() async throws {
            let stack = try StackUnderTest.required()
            try #require(!stack.favoritesReplicas.isEmpty)
            let (app, user) = try await FaultInjection.signedInClient(stack, experience: .rijksmuseum, label: "stall")
            let items = try await app.get("/v1/catalog/rijksmuseum/items?q=rembrandt").decode(CatalogPage.self).items
            try #require(items.count >= 3)

            let pool = DatabasePool(
                connection: ConnectionConfiguration(connectionString: stack.favoritesDatabaseURL,
                                                    applicationName: "e2e-long-transaction",
                                                    idleInTransactionTimeout: .seconds(300)),
                pool: PoolConfiguration(size: 1), logger: .init(label: "e2e")
            )
            let (stalledLag, heldFor) = try await pool.closing { pool in
                try await pool.withConnection { connection in
                    // An open transaction with an id of its own: every later commit is "maybe followed by it".
                    _ = try await connection.query("BEGIN")
                    _ = try await connection.query("SELECT pg_current_xact_id()")
                    let began = ContinuousClock.now
                    var writes = 0
                    for round in 0..<FaultInjection.loadSeconds {
                        for item in items.prefix(3) {
                            let path = "/v1/favorites/rijksmuseum/\(item.id)"
                            let status = try await app.send(round.isMultiple(of: 2) ? .PUT : .DELETE, path).status
                            #expect([.created, .noContent].contains(status), "\(path) → \(status.code)")
                            writes += 1
                        }
                        // A round a second: the projection polls and is woken by NOTIFY meanwhile, and must wait.
                        try await Task.sleep(for: .seconds(1))
                    }
                    _ = try await app.send(.PUT, "/v1/favorites/rijksmuseum/\(items[0].id)")
                    // The projection has had seconds and NOTIFYs to run; it must still wait, and report the wait.
                    let lag = try await eventually({ try await Self.largestLag(stack) }) { $0 >= writes }
                    let counted = try await connection.query("""
                        SELECT count(*) FROM favorites.popular_members WHERE user_id = \(user)
                        """).scalar(Int.self)
                    #expect(counted == 0, "the projection applied events past an open transaction")
                    _ = try await connection.query("ROLLBACK")
                    return (lag, ContinuousClock.now - began)
                }
            }

            let caughtUp = ContinuousClock.now
            let lagAfter = try await eventually({ try await Self.largestLag(stack) }) { $0 == 0 }
            let catchUp = ContinuousClock.now - caughtUp
            let mismatch = try await eventually({ try await Self.membersMismatch(stack) }) { $0 == 0 }
            FaultInjection.report("long transaction", """
                transaction held \(heldFor.inSeconds) during writes; projection lag rose to \(stalledLag) events \
                with nothing applied; after it ended, lag 0 within \(catchUp.inSeconds); projection vs view: \
                \(mismatch) rows differ
                """)
            #expect(stalledLag > 0)
            #expect(lagAfter == 0, "the projection did not catch up")
            #expect(mismatch == 0, "the projection's members differ from the favorites view by \(mismatch) rows")
        }

        /// The largest `projection_lag_events` the favorites-service replicas export for the popular projection.
        static func largestLag(_ stack: StackUnderTest) async throws -> Int {
            var largest = 0
            for replica in stack.favoritesReplicas {
                let metrics = String(decoding: try await StackClient(replica).get("/metrics").body, as: UTF8.self)
                for line in metrics.split(separator: "\n")
                where line.hasPrefix("projection_lag_events{") && line.contains("projection=\"popular\"") {
                    largest = max(largest, Int(Double(line.split(separator: " ").last ?? "") ?? 0))
                }
            }
            return largest
        }

        /// Rows in which the projection's copy of (user, experience, item) and the favorites view differ, and items
        /// whose count differs from the view's (cards users wrote are theirs alone: never counted).
        static func membersMismatch(_ stack: StackUnderTest) async throws -> Int {
            try await stack.withFavoritesDatabase { pool in
                try await pool.query("""
                    SELECT (SELECT count(*) FROM (
                               (SELECT user_id, experience, item_id FROM favorites.favorites WHERE NOT written
                                EXCEPT SELECT user_id, experience, item_id FROM favorites.popular_members)
                               UNION ALL
                               (SELECT user_id, experience, item_id FROM favorites.popular_members
                                EXCEPT SELECT user_id, experience, item_id FROM favorites.favorites WHERE NOT written))
                               AS members)
                         + (SELECT count(*) FROM (
                               (SELECT experience, item_id, count(*) FROM favorites.favorites WHERE NOT written
                                 GROUP BY 1, 2
                                EXCEPT SELECT experience, item_id, favorite_count FROM favorites.popular_items
                                        WHERE favorite_count > 0)
                               UNION ALL
                               (SELECT experience, item_id, favorite_count FROM favorites.popular_items
                                 WHERE favorite_count > 0
                                EXCEPT SELECT experience, item_id, count(*) FROM favorites.favorites WHERE NOT written
                                 GROUP BY 1, 2))
                               AS counts)
                    """).scalar(Int.self)
            }
        }
    }
}
