import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct ListenerTests {
    @Test func notificationsArriveAndSurviveATerminatedSession() async throws {
        try await withTestPool(size: 1) { pool, database in
            let listener = PostgresListener(
                configuration: ConnectionConfiguration(
                    connectionString: database.connectionString, applicationName: "listener-under-test"
                ),
                channels: ["favorites"],
                retryDelay: .milliseconds(50)
            )
            var events = listener.events().makeAsyncIterator()
            #expect(await events.next() == .listening)

            try await pool.query("SELECT pg_notify('favorites', \("user-1"))")
            let first = await events.next()
            guard case .notification(let notification) = first else {
                Issue.record("expected a notification, got \(String(describing: first))")
                return
            }
            #expect(notification.channel == "favorites")
            #expect(notification.payload == "user-1")

            // Kill the listener's backend: it reconnects, says so, and the next NOTIFY arrives too.
            let terminated = try await pool.query("""
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'listener-under-test'
                """).rows.count
            #expect(terminated == 1)
            #expect(await events.next() == .listening)
            try await pool.query("SELECT pg_notify('favorites', \("user-2"))")
            guard case .notification(let second) = await events.next() else {
                Issue.record("expected a notification after reconnecting")
                return
            }
            #expect(second.payload == "user-2")
        }
    }
}
