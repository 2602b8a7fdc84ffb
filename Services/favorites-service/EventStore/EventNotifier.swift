import Locking
import Logging
import Postgres
import ServiceLifecycle

/// Tells every replica which streams were appended to: a NOTIFY on `channel` whose payload lists the streams, sent
/// after the appends committed and at most once per `minimumInterval` however many appends there were. Sending it
/// inside the append transaction would put every append behind PostgreSQL's single notification-queue lock at commit.
///
/// A notification is a hint, never the data: a listener reads the log for what it names, and re-reads everything it
/// follows after its session comes back (``PostgresListener/Event/listening``), since hints sent meanwhile are lost.
/// A hint that cannot be sent is sent again (every `retryInterval`): a change stream has no poll, and would otherwise
/// wait for the user's next write.
public struct EventNotifier: Service {
    let pool: DatabasePool
    let channel: String
    let minimumInterval: Duration
    let retryInterval: Duration
    let logger: Logger
    private let appended = Locked<Set<String>>([])
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    public init(pool: DatabasePool, channel: String, minimumInterval: Duration = .milliseconds(10),
                retryInterval: Duration = .milliseconds(500), logger: Logger) {
        self.pool = pool
        self.channel = channel
        self.minimumInterval = minimumInterval
        self.retryInterval = retryInterval
        self.logger = logger
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Call after an append to `stream` committed. Never waits.
    public func eventsAppended(to stream: String) {
        appended.withLock { _ = $0.insert(stream) }
        signal.yield()
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var failing = false
            for await _ in signals {
                let streams = appended.withLock { streams in
                    defer { streams.removeAll(keepingCapacity: true) }
                    return streams
                }
                let unsent = await send(listing: streams)
                if unsent.isEmpty {
                    if failing { logger.notice("append notifications sent again") }
                    failing = false
                    try? await Task.sleep(for: minimumInterval)
                } else {
                    if !failing { logger.warning("cannot send append notifications; retrying") }  // once per outage
                    failing = true
                    appended.withLock { $0.formUnion(unsent) }
                    signal.yield()
                    try? await Task.sleep(for: retryInterval)
                }
            }
        }
    }

    /// NOTIFYs the streams, and returns those it could not.
    private func send(listing streams: Set<String>) async -> Set<String> {
        var unsent: Set<String> = []
        for payload in Self.payloads(listing: streams) {
            do {
                _ = try await pool.query("SELECT pg_notify(\(channel), \(payload))")
            } catch {
                unsent.formUnion(Self.streams(in: payload).map(String.init))
            }
        }
        return unsent
    }

    /// The streams joined by commas, split so that no payload reaches PostgreSQL's limit of 8000 bytes.
    static func payloads(listing streams: Set<String>, limit: Int = 7900) -> [String] {
        var payloads: [String] = []
        var current = ""
        for stream in streams.sorted() {
            if !current.isEmpty, current.utf8.count + 1 + stream.utf8.count > limit {
                payloads.append(current)
                current = ""
            }
            current += current.isEmpty ? stream : "," + stream
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    /// The streams a notification's payload lists.
    public static func streams(in payload: String) -> [Substring] {
        payload.split(separator: ",")
    }
}
