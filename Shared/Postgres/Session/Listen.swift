import CLibpq
import Locking
import PostgresValues
import PostgresWaiting

extension PostgresConnection {
    /// Listens on `channels` until the task is cancelled or the session breaks (then it throws), calling `deliver`
    /// for each notification. The session does nothing else meanwhile, which is why listeners get one of their own.
    package func listen(
        to channels: [String],
        onListening: () -> Void,
        deliver: (PostgresNotification) -> Void
    ) async throws {
        for channel in channels {
            try await query("LISTEN \(identifier: channel)")
        }
        onListening()
        let connection = try begin()
        defer { settle(connection) }
        try await withTaskCancellationHandler {
            try receiveNotifications(on: connection, deliver: deliver)
        } onCancel: { [thread] in
            thread.interrupt()
        }
    }

    /// Delivers notifications as they arrive, waiting in between, until the task is cancelled.
    private func receiveNotifications(on connection: OpaquePointer, deliver: (PostgresNotification) -> Void) throws {
        try consumeInput(connection)  // notifications may have arrived with the LISTEN answers
        while !Task.isCancelled {
            guard PQstatus(connection) == CONNECTION_OK else {
                throw PostgresError(kind: .connectionLost, message: "the listening session was lost")
            }
            while let notify = PQnotifies(connection) {
                let notification = notify.pointee
                deliver(PostgresNotification(
                    channel: String(cString: notification.relname),
                    payload: String(cString: notification.extra),
                    senderProcessID: notification.be_pid
                ))
                PQfreemem(notify)
            }
            do {
                try awaitInput(connection, interruptible: true)
            } catch {
                throw PostgresError(kind: .connectionLost, message: "the listening session was lost")
            }
        }
    }
}

/// A NOTIFY received by a listener.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    public let senderProcessID: Int32
}

