import EventStore
import Foundation
import InMemoryLogging
import Logging
import Postgres
import TestSupport
import Testing

/// The hints the notifier sends after appends. A change stream learns of appends from nothing else.
@Suite struct EventNotifierTests {
    /// The database refuses the notifier's sessions for a while (its role may not log in): the hint is sent once the
    /// database takes them again, not dropped.
    @Test(.timeLimit(.minutes(1))) func aHintThatCannotBeSentIsSentOnceTheDatabaseTakesItAgain() async throws {
        try await withTestPool(size: 1) { admin, database in
            let role = "notifier_" + UUID().uuidString.prefix(8).lowercased()
            try await admin.query("CREATE ROLE \(identifier: role) NOLOGIN")
            do {
                let listener = PostgresListener(
                    configuration: ConnectionConfiguration(connectionString: database.connectionString,
                                                           applicationName: "listener"),
                    channels: ["appends"], retryDelay: .milliseconds(50))
                var events = listener.events().makeAsyncIterator()
                #expect(await events.next() == .listening)

                let log = InMemoryLogHandler()
                let pool = DatabasePool(
                    connection: ConnectionConfiguration(connectionString: database.connectionString + " user=\(role)",
                                                        applicationName: "notifier"),
                    pool: PoolConfiguration(size: 1, initialBackoff: .milliseconds(20), maxBackoff: .milliseconds(50)))
                let notifier = EventNotifier(pool: pool, channel: "appends", retryInterval: .milliseconds(50),
                                             logger: Logger(label: "notifier") { _ in log })
                let running = Task { try await notifier.run() }
                notifier.eventsAppended(to: "user-1")
                let refused = try await eventually({ log.entries }, until: { !$0.isEmpty })
                #expect(refused.map(\.level) == [.warning])

                try await admin.query("ALTER ROLE \(identifier: role) LOGIN")
                let hint = await events.next()
                #expect(hint?.notification?.channel == "appends")
                #expect(hint?.notification?.payload == "user-1")
                let recovered = try await eventually({ log.entries }, until: { $0.count > 1 })
                #expect(recovered.map(\.level) == [.warning, .notice])
                running.cancel()
                await pool.close()
            } catch {
                try? await admin.query("DROP ROLE IF EXISTS \(identifier: role)")
                throw error
            }
            try await admin.query("DROP ROLE \(identifier: role)")
        }
    }
}

extension PostgresListener.Event {
    var notification: PostgresNotification? {
        if case .notification(let notification) = self { notification } else { nil }
    }
}
