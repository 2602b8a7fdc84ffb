@testable import FavoritesService
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceKit
import TestSupport
import Testing

/// The change stream's own rules on one replica: it ends with its token, refuses a position past the log and a
/// replica that is full, and sends what the log holds after the position it is given. (Resuming across a dropped
/// connection, replicas, a lost notification session and sign-out: Tests/EndToEndTests/ChangeStreamTests.swift.)
@Suite struct ChangeStreamRouteTests {
    /// The whole response of a stream whose token lives `lifetime` seconds: it ends when the token expires.
    static func stream(_ api: FavoritesHarness, user: UUID, lifetime: TimeInterval, query: String = "") async throws
        -> (status: HTTPResponse.Status, headers: HTTPFields, body: String)
    {
        let token = try await api.authority.token(user: user, lifetime: lifetime)
        return try await api.client.execute(uri: "/v1/favorites/stream" + query, method: .get,
                                            headers: [.authorization: "Bearer \(token)"]) { response in
            (response.status, response.headers, String(buffer: response.body))
        }
    }

    /// A stream's request as a phone sends it, for a ``RawConnection``.
    static func streamRequest(_ token: String) -> String {
        "GET /v1/favorites/stream HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n\r\n"
    }

    /// Until the replica holds `streams` open streams (its `/metrics`), however slowly a busy machine opens them.
    static func waitUntilOpen(_ api: FavoritesHarness, streams: Int) async throws {
        let gauge = try await eventually({
            try await api.client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
        }, until: { $0.contains("favorites_streams_open \(streams)") })
        try #require(gauge.contains("favorites_streams_open \(streams)"), "the stream did not open")
    }

    @Test func anExpiredTokenEndsItsStreamAfterWhatTheLogHeld() async throws {
        try await FavoritesHarness.run { api in
            let user = try await api.user()
            #expect(try await api.call(.put, "/v1/favorites/mobiles/1", as: user).status == .created)
            #expect(try await api.call(.put, "/v1/favorites/mobiles/2", as: user).status == .created)
            let (status, headers, body) = try await Self.stream(api, user: user.id, lifetime: 4, query: "?after=1")
            #expect(status == .ok)
            #expect(headers[.contentType] == "text/event-stream")
            let events = body.components(separatedBy: "\n\n").filter { !$0.isEmpty && !$0.hasPrefix(":") }
            #expect(events.first == "retry: 2000\nid: 1\nevent: ready\ndata: {\"version\":1}")
            #expect(events.dropFirst().first?.hasPrefix("id: 2\nevent: change\ndata: {") == true)
            #expect(events.last == "event: end\ndata: {\"reason\":\"token-expired\"}")
            #expect(events.count == 3)
        }
    }

    /// A profile changed on another device (auth-service's feed, polled) comes on the stream as a `profile` event,
    /// without an id (it is no position in the log of favorites), once, beside the changes of favorites. Read as it
    /// comes, so no token lifetime bounds how slowly a busy machine may deliver it.
    @Test func aProfileChangedElsewhereComesOnTheStream() async throws {
        try await FavoritesHarness.run(environment: ["PROFILE_POLL_MS": "100"], mode: .live) { api in
            let user = try await api.user()
            let other = try await api.user()
            let token = try await api.authority.token(user: user.id, lifetime: 60)
            let stream = try RawConnection(port: try #require(api.client.port))
            defer { stream.close() }
            try stream.send(Self.streamRequest(token))
            var received = await stream.read(until: "event: ready").text
            /// The data of each `profile` event received so far.
            func profiles() -> [String] {
                // "\r\n" (the chunks' framing) is one Character: split on every kind of line break.
                let lines = received.split(whereSeparator: \.isNewline)
                return zip(lines, lines.dropFirst()).filter { $0.0 == "event: profile" }
                    .map { String($0.1.dropFirst("data: ".count)) }
            }
            /// Reads event after event until `done` holds (or the stream ends, or stays silent 30 s).
            func readOn(until done: () -> Bool) async {
                while !done() {
                    let more = await stream.read(until: "\n\n")
                    received += more.text
                    if more.closed || more.text.isEmpty { return }
                }
            }

            let first = api.authority.profileChanges.change(user.id, experience: .bestsellers,
                                                            preferences: ["defaultCategory": "hardcover-fiction"],
                                                            displayName: "Ana")
            api.authority.profileChanges.change(other.id, experience: .mobiles)  // someone else's: not on this stream
            #expect(try await api.call(.put, "/v1/favorites/mobiles/1", as: user).status == .created)
            await readOn { !profiles().isEmpty && received.contains("id: 1\nevent: change\n") }
            // The poll that brings a second change reads the first again (its window overlaps): sent once all the same.
            let second = api.authority.profileChanges.change(user.id, experience: .mobiles)
            await readOn { profiles().count >= 2 }
            #expect(received.contains("id: 1\nevent: change\n"))
            let sent = try profiles().map { try ServiceJSON.decoder.decode(ProfileChange.self, from: Data($0.utf8)) }
            #expect(sent == [first, second])
            #expect(!received.lowercased().contains(other.id.uuidString.lowercased()))
        }
    }

    @Test func aPositionPastTheLogIsRefused() async throws {
        try await FavoritesHarness.run { api in
            let user = try await api.user()
            let (status, _, body) = try await Self.stream(api, user: user.id, lifetime: 60, query: "?after=5")
            #expect(status == .conflict)
            #expect(body.contains("sync-position-ahead"))
            let (bad, _, _) = try await Self.stream(api, user: user.id, lifetime: 60, query: "?after=-1")
            #expect(bad == .badRequest)
        }
    }

    /// With room for one stream, a second one is refused with 503 and `Retry-After` while the first is open.
    @Test func aFullReplicaRefusesAnotherStream() async throws {
        try await FavoritesHarness.run(environment: ["FAVORITES_STREAMS_MAX": "1"]) { api in
            async let first = Self.stream(api, user: UUID(), lifetime: 10)
            try await Self.waitUntilOpen(api, streams: 1)
            let (status, headers, body) = try await Self.stream(api, user: UUID(), lifetime: 3)
            #expect(status == .serviceUnavailable)
            #expect(headers[.retryAfter] == "2")
            #expect(body.contains("service-unreachable"))
            #expect(try await first.status == .ok)
        }
    }

    /// One token opened 300 streams, and a closed one kept its place about 35 s. Now a user holds at most
    /// `FAVORITES_STREAMS_PER_USER` (429 past them) while others still get theirs, and a stream whose client goes away
    /// frees its place at once: heartbeats are 5 minutes apart here, so no write can be what notices.
    @Test func aUserHoldsAFewStreamsAndAClosedOneFreesItsPlaceAtOnce() async throws {
        let environment = ["FAVORITES_STREAMS_PER_USER": "2", "FAVORITES_STREAM_HEARTBEAT_SECONDS": "300"]
        try await FavoritesHarness.run(environment: environment, mode: .live) { api in
            let port = try #require(api.client.port)
            let ana = try await api.authority.token(user: UUID(), lifetime: 600)
            /// The answer up to a stream's `ready` event, or to the problem type of a refusal for too many.
            func open(_ token: String) async throws -> (connection: RawConnection, head: String) {
                let connection = try RawConnection(port: port)
                try connection.send(Self.streamRequest(token))
                return (connection, await connection.read(until: "too-many-streams", orUntil: "event: ready").text)
            }
            let first = try await open(ana), second = try await open(ana)
            #expect(first.head.hasPrefix("HTTP/1.1 200") && second.head.hasPrefix("HTTP/1.1 200"))
            let third = try await open(ana)
            #expect(third.head.hasPrefix("HTTP/1.1 429"))
            #expect(third.head.lowercased().contains("retry-after: 5"))
            #expect(third.head.contains("too-many-streams"))
            let bo = try await open(try await api.authority.token(user: UUID(), lifetime: 600))
            #expect(bo.head.hasPrefix("HTTP/1.1 200"))
            first.connection.close()
            let reopened = try await eventually({ try await open(ana) }, until: { $0.head.hasPrefix("HTTP/1.1 200") })
            #expect(reopened.head.hasPrefix("HTTP/1.1 200"), "the closed stream still held its place")
        }
    }
}
