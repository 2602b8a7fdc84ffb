import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What ``FavoriteMeClient/liveChanges(in:)`` tells an app.
public enum LiveChange: Sendable, Equatable {
    /// The stream is open (again): the device's favorites are current.
    case connected
    /// A change made on any of the user's devices, already in the device's favorites.
    case changed(FavoriteChange)
    /// The device was too far behind for the stream to replay each change: its favorites were read again. Redraw.
    case resynced
    /// The connection dropped (no network, a replica going away); the stream reconnects by itself after `retryIn`.
    case disconnected(FavoriteMeError, retryIn: Duration)
}

extension FavoriteMeClient {
    /// The signed-in user's changes as they happen on any of their devices, each already applied to the device's
    /// favorites (``syncedFavorites(in:)``, ``hearts(in:)``) before it is told: a heart filled on the phone fills on
    /// the tablet. `experience` limits what is told, not what is kept.
    ///
    /// The stream resumes from the device's own position, so nothing is missed across reconnects, launches or a
    /// network that comes and goes: it reconnects with backoff (`retryPolicy`'s), at once when its access token
    /// expired (with a fresh one) or its server shut down (to another). Each change wakes a sync of the changes feed
    /// (one request, shared by changes that arrive together), so the device's copy and its queue of writes are kept
    /// exactly as ``syncFavorites()`` keeps them. A change of the user's profile on another device (experience,
    /// preferences, display name) is read again and told on ``authEvents()`` as ``AuthEvent/refreshed(_:)``. It ends
    /// when the session ends (signed out here or on another device) or when the task iterating it is cancelled.
    public func liveChanges(in experience: ExperienceID? = nil) -> AsyncStream<LiveChange> {
        AsyncStream { continuation in
            let task = Task {
                await self.followChanges(in: experience) { continuation.yield($0) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func followChanges(in experience: ExperienceID?, tell: (LiveChange) -> Void) async {
        var failures = 0
        while !Task.isCancelled {
            let failure: FavoriteMeError
            do throws(FavoriteMeError) {
                guard let user = await openCurrentUser(), let start = await outbox.syncStart(for: user) else { return }
                switch try await followStream(of: user, after: start.since, in: experience, tell: tell) {
                case .sessionEnded: return
                case .reconnect: failures = 0; continue
                case .dropped(let afterConnecting):
                    if afterConnecting { failures = 0 }
                    failure = .transport("the change stream closed")
                }
            } catch .signedOut {
                return
            } catch .refused(let problem) where problem.type == .syncPositionAhead {
                // The device's copy is not of this account's log: a sync starts it again from the beginning.
                if (try? await syncFavorites()) != nil { continue }
                failure = .refused(problem)
            } catch {
                failure = error
            }
            failures += 1
            let seconds = retryPolicy.delay(afterFailures: failures, retryAfter: failure.retryAfter,
                                            jitter: Double.random(in: 0...1))
            let delay = Duration.milliseconds(Int(seconds * 1000))
            tell(.disconnected(failure, retryIn: delay))
            try? await Task.sleep(for: delay)
        }
    }

    /// How one connection of the stream ended.
    private enum StreamEnd {
        /// The session ended: nothing to reconnect with.
        case sessionEnded
        /// The server asked for a new connection (token expired, shutting down): at once.
        case reconnect
        /// The connection was lost without a word: after a pause (short if it had been open).
        case dropped(afterConnecting: Bool)
    }

    /// One connection: opened with the session's token (refreshed once if the server says it expired), read until it
    /// ends. Each `change` whose version the device's copy has not reached runs a sync.
    private func followStream(of user: UUID, after position: Int64, in experience: ExperienceID?,
                              tell: (LiveChange) -> Void) async throws(FavoriteMeError) -> StreamEnd {
        let call = Call(method: "GET", path: "/v1/favorites/stream",
                        query: [URLQueryItem(name: "after", value: String(position))])
        var credential = try await sessions.credential(for: user, refresh: refresher)
        var events: AsyncThrowingStream<ServerSentEvent, any Error>
        do {
            events = try await openEventStream(call, token: credential.token)
        } catch .refused(let problem) where problem.status == 401 && [.tokenExpired, .invalidToken].contains(problem.type) {
            credential = try await sessions.refreshed(after: credential, refresh: refresher)
            events = try await openEventStream(call, token: credential.token)
        }
        var synced = position
        var connected = false
        do {
            for try await event in events {
                switch event.type {
                case "ready":
                    connected = true
                    tell(.connected)
                case "change":
                    guard let version = event.id.flatMap(Int64.init), version > synced else { continue }
                    let report = try await syncFavorites()
                    synced = await outbox.syncStart(for: user)?.since ?? synced
                    for change in report.changes where experience == nil || change.experience == experience {
                        tell(.changed(change))
                    }
                case "reload":
                    _ = try await syncFavorites()
                    synced = await outbox.syncStart(for: user)?.since ?? synced
                    tell(.resynced)
                case "profile":
                    // The profile changed, here or on another device: read as the server has it now, which
                    // ``authEvents()`` tells as `.refreshed`. A failed read is no reason to drop the stream.
                    _ = try? await me()
                case "end":
                    if event.data.contains("session-ended") { return .sessionEnded }
                    if event.data.contains("token-expired") {
                        // Expired on the server's clock, which may run ahead of this one: refresh before reconnecting.
                        _ = try await sessions.refreshed(after: credential, refresh: refresher)
                    }
                    return .reconnect
                default:
                    continue
                }
            }
        } catch let error as FavoriteMeError {
            throw error
        } catch {
            throw Self.failure(error)
        }
        return .dropped(afterConnecting: connected)
    }

    /// Opens a Server-Sent Events response: its events once the server answered 200, or its refusal.
    private func openEventStream(_ call: Call, token: String) async throws(FavoriteMeError)
        -> AsyncThrowingStream<ServerSentEvent, any Error>
    {
        var request = try urlRequest(for: call, token: token, accept: "text/event-stream")
        // The longest silence before the connection counts as lost: three of the server's heartbeats.
        request.timeoutInterval = 45
        observer?(call.method, call.path)
        let source = EventSource(request: request, configuration: urlSession.configuration)
        return try await source.opened()
    }
}

/// One Server-Sent Event.
struct ServerSentEvent: Sendable, Equatable {
    var id: String?
    var type: String
    var data: String
}

/// Reads Server-Sent Events from bytes as they arrive (the WHATWG event-stream format: fields `id`, `event`, `data`,
/// events ended by a blank line, comment lines ignored).
struct ServerSentEventParser {
    private var pending = Data()

    /// The events `bytes` complete.
    mutating func feed(_ bytes: Data) -> [ServerSentEvent] {
        pending.append(bytes)
        var events: [ServerSentEvent] = []
        while let end = blankLine() {
            let block = String(decoding: pending[pending.startIndex..<end.lowerBound], as: UTF8.self)
            pending.removeSubrange(pending.startIndex..<end.upperBound)
            if let event = Self.event(block) { events.append(event) }
        }
        return events
    }

    private func blankLine() -> Range<Data.Index>? {
        [Data("\n\n".utf8), Data("\r\n\r\n".utf8)].compactMap { pending.range(of: $0) }.min { $0.lowerBound < $1.lowerBound }
    }

    /// One event block; nil for one with no field (a comment alone: a heartbeat).
    static func event(_ block: String) -> ServerSentEvent? {
        var event = ServerSentEvent(id: nil, type: "message", data: "")
        var fields = 0
        for line in block.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) where !line.hasPrefix(":") {
            let colon = line.firstIndex(of: ":")
            let field = colon.map { line[..<$0] } ?? line[...]
            var value = colon.map { line[line.index(after: $0)...] } ?? ""
            if value.hasPrefix(" ") { value = value.dropFirst() }
            fields += 1
            switch field {
            case "id": event.id = String(value)
            case "event": event.type = String(value)
            case "data": event.data += event.data.isEmpty ? String(value) : "\n" + value
            default: fields -= 1
            }
        }
        return fields > 0 ? event : nil
    }
}

/// One Server-Sent Events request over URLSession's delegate (which Foundation on Linux has too): the response's
/// events as they arrive. `@unchecked Sendable`: the delegate's methods run one at a time on its serial queue, and only
/// they touch `parser`, `failure` and `opening`.
private final class EventSource: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let events: AsyncThrowingStream<ServerSentEvent, any Error>
    private let sink: AsyncThrowingStream<ServerSentEvent, any Error>.Continuation
    private var parser = ServerSentEventParser()
    private var failure: (status: Int, body: Data, retryAfter: String?)?
    private var opening: CheckedContinuation<Void, any Error>?
    private let request: URLRequest
    private let configuration: URLSessionConfiguration
    private let queue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    init(request: URLRequest, configuration: URLSessionConfiguration) {
        self.request = request
        self.configuration = configuration
        (events, sink) = AsyncThrowingStream.makeStream(of: ServerSentEvent.self)
    }

    /// Sends the request; returns the events once the answer is a 200, or throws its refusal.
    func opened() async throws(FavoriteMeError) -> AsyncThrowingStream<ServerSentEvent, any Error> {
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        let task = session.dataTask(with: request)
        sink.onTermination = { _ in
            task.cancel()
            session.invalidateAndCancel()
        }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    queue.addOperation {
                        self.opening = continuation
                        task.resume()
                    }
                }
            } onCancel: {
                task.cancel()
            }
        } catch let error as FavoriteMeError {
            session.invalidateAndCancel()
            throw error
        } catch {
            session.invalidateAndCancel()
            throw FavoriteMeClient.failure(error)
        }
        return events
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        if http?.statusCode == 200 {
            opening?.resume()
            opening = nil
        } else {
            failure = (http?.statusCode ?? 0, Data(), http?.value(forHTTPHeaderField: "Retry-After"))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if failure != nil {
            failure?.body.append(data)
            return
        }
        for event in parser.feed(data) { sink.yield(event) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let outcome: FavoriteMeError? = if let failure {
            FavoriteMeClient.refusal(status: failure.status, body: failure.body, retryAfter: failure.retryAfter)
        } else {
            error.map(FavoriteMeClient.failure)
        }
        if let opening {
            opening.resume(throwing: outcome ?? .transport("the stream closed before it answered"))
            self.opening = nil
        }
        if let outcome { sink.finish(throwing: outcome) } else { sink.finish() }
        session.finishTasksAndInvalidate()
    }
}
