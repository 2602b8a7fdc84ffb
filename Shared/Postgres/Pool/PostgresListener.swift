import Foundation
import PostgresSession
import PostgresValues
import Logging

/// LISTEN on a dedicated session, as an `AsyncSequence` that survives connection loss.
///
/// Notifications are only a wake-up hint: any sent while the session was down are lost. So after every (re)connect
/// the sequence yields ``Event/listening``, and consumers re-read the state they care about.
public struct PostgresListener: Sendable {
    public enum Event: Sendable, Equatable {
        /// The session is (again) listening: re-read state, since notifications may have been missed.
        case listening
        case notification(PostgresNotification)
    }

    let configuration: ConnectionConfiguration
    let channels: [String]
    let retryDelay: Duration
    let logger: Logger

    public init(
        configuration: ConnectionConfiguration,
        channels: [String],
        retryDelay: Duration = .milliseconds(500),
        logger: Logger = Logger(label: "postgres.listener")
    ) {
        self.configuration = configuration
        self.channels = channels
        self.retryDelay = retryDelay
        self.logger = logger
    }

    /// Starts listening; stops when the consumer stops iterating (the stream is released) or its task is cancelled.
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
        let task = Task { [self] in
            while !Task.isCancelled {
                var connection: PostgresConnection?
                do {
                    let session = try await PostgresConnection(configuration: configuration)
                    connection = session
                    try await session.listenAnnounced(to: channels) { event in continuation.yield(event) }
                } catch {
                    if !Task.isCancelled {
                        logger.warning("listener lost its session; reconnecting", metadata: ["error": "\(error)"])
                    }
                }
                await connection?.close()
                try? await Task.sleep(for: retryDelay)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

extension PostgresConnection {
    /// LISTENs, announces ``PostgresListener/Event/listening``, then delivers notifications until cancelled or lost.
    func listenAnnounced(
        to channels: [String],
        deliver: @escaping @Sendable (PostgresListener.Event) -> Void
    ) async throws {
        try await listen(to: channels, onListening: { deliver(.listening) }, deliver: { deliver(.notification($0)) })
    }
}
