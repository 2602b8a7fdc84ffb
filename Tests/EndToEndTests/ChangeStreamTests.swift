import AsyncHTTPClient
import Contracts
@testable import FavoriteMeClient
import Foundation
import NIOCore
import NIOHTTP1
import Postgres
import Testing

extension EndToEnd {
    /// The change stream through the real stack: resumed without a gap or a duplicate, fanned out across replicas, and
    /// ended with the session that opened it.
    @Suite(.timeLimit(.minutes(1))) struct ChangeStreamTests {
        @Test func aDroppedStreamResumesWithEveryChangeOnceAndInOrder() async throws {
            let stack = try StackUnderTest.required()
            let (client, _) = try await FaultInjection.signedInClient(
                stack, experience: .mobiles, label: "stream-resume")
            let token = try #require(client.token)
            let first = try await ServerSentEvents.open(stack.gateway, token: token, query: "?after=0")
            #expect(first.status == .ok)
            #expect(await first.next()?.type == "ready")
            #expect(try await client.send(.PUT, "/v1/favorites/mobiles/1").status == .created)
            #expect(try await client.send(.PUT, "/v1/favorites/mobiles/2").status == .created)
            var received = try await first.changes(2)
            first.close()

            // Away: another device writes meanwhile.
            #expect(try await client.send(.DELETE, "/v1/favorites/mobiles/1").status == .noContent)
            #expect(try await client.send(.PUT, "/v1/favorites/mobiles/3").status == .created)
            let lastID = try #require(received.last?.id)
            let second = try await ServerSentEvents.open(stack.gateway, token: token, lastEventID: lastID)
            #expect(await second.next()?.id == lastID)  // `ready`, at the position given
            received += try await second.changes(2)
            #expect(try await client.send(.PUT, "/v1/favorites/mobiles/4").status == .created)
            received += try await second.changes(1)
            second.close()

            let log = try await client.get("/v1/favorites/changes?since=0").decode(FavoriteChanges.self).changes
            #expect(received.map(\.id) == log.map { String($0.version) })
            #expect(try received.map { try $0.change() } == log)
        }

        @Test func aWriteThroughOneReplicaReachesAStreamHeldByTheOther() async throws {
            let stack = try StackUnderTest.required()
            try #require(stack.favoritesReplicas.count >= 2)
            let (client, _) = try await FaultInjection.signedInClient(
                stack, experience: .mobiles, label: "stream-fanout")
            let token = try #require(client.token)
            let stream = try await ServerSentEvents.open(stack.favoritesReplicas[0], token: token)
            #expect(await stream.next()?.type == "ready")
            let other = StackClient(stack.favoritesReplicas[1], token: token)
            #expect(try await other.send(.PUT, "/v1/favorites/mobiles/5").status == .created)
            let change = try #require(try await stream.changes(1).first).change()
            #expect(change.kind == .added && change.itemId == "5")
            stream.close()
        }

        /// Signing out everywhere ends every stream of the user's sessions within two seconds (the acceptance bound:
        /// the replicas poll the ended sessions every REVOCATION_POLL_MS, here 500 ms, and check their streams every
        /// 500 ms).
        @Test func signingOutEverywhereEndsTheUsersStreams() async throws {
            let stack = try StackUnderTest.required()
            let email = uniqueEmail("stream-logout")
            let anonymous = StackClient(stack.gateway)
            let phone = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: email, password: accountPassword, experience: ExperienceID.mobiles.rawValue)
            ).decode(AuthSession.self)
            let tablet = try await anonymous.send(.POST, "/v1/auth/login", json: SignInRequest(
                email: email, password: accountPassword)).decode(AuthSession.self)
            let streams = [
                try await ServerSentEvents.open(stack.gateway, token: phone.accessToken),
                try await ServerSentEvents.open(stack.gateway, token: tablet.accessToken),
            ]
            for stream in streams { #expect(await stream.next()?.type == "ready") }
            let signedOut = ContinuousClock.now
            let signOut = try await anonymous.with(token: phone.accessToken)
                .send(.POST, "/v1/auth/logout?scope=global")
            #expect(signOut.status == .noContent)
            for stream in streams {
                let last = await stream.next()
                #expect(last?.type == "end" && last?.data == #"{"reason":"session-ended"}"#)
                #expect(await stream.next() == nil)  // and the response is over
            }
            let elapsed = ContinuousClock.now - signedOut
            #expect(elapsed < .seconds(2), "the streams ended \(elapsed) after the sign-out")
            FaultInjection.report(
                "change streams", "two sessions' streams ended \(elapsed) after signing out everywhere")
        }
    }
}

extension FaultInjection {
    /// The replicas' notification sessions killed: a fault every stream of the stack sees, so it runs with the faults.
    @Suite(.timeLimit(.minutes(1))) struct NotificationSessionTests {
        /// PostgreSQL ends the replicas' LISTEN sessions in the middle of a burst of writes: the notifications sent
        /// while they reconnect are lost, and the streams still receive every change, read from the log once they
        /// listen again.
        @Test func streamsCatchUpFromTheLogWhenTheirNotificationSessionIsKilled() async throws {
            let stack = try StackUnderTest.required()
            let (client, _) = try await FaultInjection.signedInClient(
                stack, experience: .mobiles, label: "stream-listen")
            let token = try #require(client.token)
            let streams = try await stack.favoritesReplicas.asyncMap { replica in
                try await ServerSentEvents.open(replica, token: token, query: "?after=0")
            }
            for stream in streams { #expect(await stream.next()?.type == "ready") }
            // The five phones favorited, unfavorited, then two again: twelve changes.
            let writes: [(method: HTTPMethod, id: String)] = (1...5).map { (.PUT, "\($0)") }
                + (1...5).map { (.DELETE, "\($0)") } + [(.PUT, "1"), (.PUT, "2")]
            for (index, write) in writes.enumerated() {
                #expect(try await client.send(write.method, "/v1/favorites/mobiles/\(write.id)").status.code < 300)
                if index == 5 {
                    let ended = try await stack.withFavoritesDatabase { pool in
                        try await pool.query("""
                            SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                                   WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()) AS ended
                            """).scalar(Int.self)
                    }
                    #expect(ended >= stack.favoritesReplicas.count)
                }
            }
            for stream in streams {
                let received = try await stream.changes(writes.count).map { try $0.change() }
                #expect(received.map(\.itemId) == writes.map(\.id))
                #expect(received.map(\.kind) == writes.map { $0.method == .PUT ? .added : .removed })
                #expect(received.map(\.version) == Array(1...Int64(writes.count)))
                stream.close()
            }
        }
    }
}

/// A change stream read as a phone reads it: a real HTTP response, its events parsed as they arrive. Read from one
/// task; the suite's time limit stands in for a stream that stops sending.
final class ServerSentEvents {
    struct Event: Equatable, Sendable {
        var id: String?
        var type: String
        var data: String

        func change() throws -> FavoriteChange {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(FavoriteChange.self, from: Data(data.utf8))
        }
    }

    let status: HTTPResponseStatus
    private var iterator: AsyncStream<Event>.Iterator
    private let reading: Task<Void, Never>

    private init(status: HTTPResponseStatus, iterator: AsyncStream<Event>.Iterator, reading: Task<Void, Never>) {
        self.status = status
        self.iterator = iterator
        self.reading = reading
    }

    /// Parses the body with the client library's parser, as it arrives.
    private static func read(_ body: HTTPClientResponse.Body, into sink: AsyncStream<Event>.Continuation) async {
        var parser = ServerSentEventParser()
        do {
            for try await buffer in body {
                for event in parser.feed(Data(buffer.readableBytesView)) {
                    sink.yield(Event(id: event.id, type: event.type, data: event.data))
                }
            }
        } catch {}
        sink.finish()
    }

    static func open(_ base: String, token: String, query: String = "", lastEventID: String? = nil,
                     client: HTTPClient = .shared) async throws -> ServerSentEvents
    {
        var request = HTTPClientRequest(url: base + "/v1/favorites/stream" + query)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await client.execute(request, timeout: .seconds(120))
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        let body = response.body
        let reading = Task { await read(body, into: sink) }
        return ServerSentEvents(status: response.status, iterator: events.makeAsyncIterator(), reading: reading)
    }

    /// The next event, nil once the response is over.
    func next() async -> Event? {
        await iterator.next()
    }

    /// The next `count` `change` events, skipping the others.
    func changes(_ count: Int) async throws -> [Event] {
        var changes: [Event] = []
        while changes.count < count {
            guard let event = await next() else { throw StackError("the stream ended after \(changes.count) changes") }
            if event.type == "change" { changes.append(event) }
        }
        return changes
    }

    func close() { reading.cancel() }
}

extension Array {
    func asyncMap<Mapped>(_ transform: (Element) async throws -> Mapped) async rethrows -> [Mapped] {
        var mapped: [Mapped] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
