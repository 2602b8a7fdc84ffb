import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
        [Data("\n\n".utf8), Data("\r\n\r\n".utf8)].compactMap { pending.range(of: $0) }
            .min { $0.lowerBound < $1.lowerBound }
    }

    /// One event block; nil for one with no field (a comment alone: a heartbeat).
    static func event(_ block: String) -> ServerSentEvent? {
        var event = ServerSentEvent(id: nil, type: "message", data: "")
        var fields = 0
        let lines = block.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline)
        for line in lines where !line.hasPrefix(":") {
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

/// A Server-Sent Events request: the response once the server answered 200 (a refusal is thrown as what it is),
/// then its events as they arrive. Ending the events (the iterating task cancelled) ends the request.
enum EventStream {
    #if canImport(FoundationNetworking)
    /// swift-corelibs-foundation has neither `URLSession.bytes(for:)` nor task delegates, so the stream runs on a
    /// session of its own, with the injected session's configuration and a delegate that reads as bytes arrive.
    static func open(_ request: URLRequest, in session: URLSession) async throws
        -> (HTTPURLResponse, AsyncThrowingStream<ServerSentEvent, any Error>)
    {
        try await EventSource(request: request, configuration: session.configuration).opened()
    }
    #else
    /// The injected session itself (its configuration, its delegate for authentication challenges and metrics),
    /// read with `bytes(for:)`, line by line.
    static func open(_ request: URLRequest, in session: URLSession) async throws
        -> (HTTPURLResponse, AsyncThrowingStream<ServerSentEvent, any Error>)
    {
        let (openings, opened) = AsyncThrowingStream.makeStream(of: HTTPURLResponse.self)
        let (events, sink) = AsyncThrowingStream.makeStream(of: ServerSentEvent.self)
        let reader = Task {
            do {
                let (bytes, response) = try await session.bytes(for: request)
                guard let http = response as? HTTPURLResponse else {
                    throw FavoriteMeError.transport("no HTTP answer")
                }
                guard http.statusCode == 200 else {
                    var body = Data()
                    for try await byte in bytes where body.count < 65_536 { body.append(byte) }
                    throw FavoriteMeClient.refusal(status: http.statusCode, body: body,
                                                   retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
                }
                opened.yield(http)
                opened.finish()
                var parser = ServerSentEventParser()
                var line = Data()
                for try await byte in bytes {
                    line.append(byte)
                    guard byte == UInt8(ascii: "\n") else { continue }
                    for event in parser.feed(line) { sink.yield(event) }
                    line.removeAll(keepingCapacity: true)
                }
                sink.finish()
            } catch {
                let failure = FavoriteMeClient.failure(error)
                opened.finish(throwing: failure)  // nothing when it had opened already
                sink.finish(throwing: failure)
            }
        }
        sink.onTermination = { _ in reader.cancel() }
        do {
            for try await response in openings { return (response, events) }
        } catch {
            reader.cancel()
            throw error
        }
        reader.cancel()
        throw CancellationError()  // the calling task was cancelled before the answer came
    }
    #endif
}

#if canImport(FoundationNetworking)
/// One Server-Sent Events request over URLSession's delegate (Linux). `@unchecked Sendable`: the delegate's methods run
/// one at a time on its serial queue, and only they touch `parser`, `failure` and `opening`.
private final class EventSource: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let events: AsyncThrowingStream<ServerSentEvent, any Error>
    private let sink: AsyncThrowingStream<ServerSentEvent, any Error>.Continuation
    private var parser = ServerSentEventParser()
    private var failure: (status: Int, body: Data, retryAfter: String?)?
    private var opening: CheckedContinuation<HTTPURLResponse, any Error>?
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

    /// Sends the request; returns the response and its events once the answer is a 200, or throws its refusal.
    func opened() async throws -> (HTTPURLResponse, AsyncThrowingStream<ServerSentEvent, any Error>) {
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        let task = session.dataTask(with: request)
        sink.onTermination = { _ in
            task.cancel()
            session.invalidateAndCancel()
        }
        do {
            let response = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    queue.addOperation {
                        self.opening = continuation
                        task.resume()
                    }
                }
            } onCancel: {
                task.cancel()
            }
            return (response, events)
        } catch {
            session.invalidateAndCancel()
            throw Task.isCancelled ? CancellationError() : FavoriteMeClient.failure(error)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        if let http, http.statusCode == 200 {
            opening?.resume(returning: http)
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
        let outcome: (any Error)? = if let failure {
            FavoriteMeClient.refusal(status: failure.status, body: failure.body, retryAfter: failure.retryAfter)
        } else {
            error.map(FavoriteMeClient.failure)
        }
        if let opening {
            opening.resume(throwing: outcome ?? FavoriteMeError.transport("the stream closed before it answered"))
            self.opening = nil
        }
        if let outcome { sink.finish(throwing: outcome) } else { sink.finish() }
        session.finishTasksAndInvalidate()
    }
}
#endif
