import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
@testable import ServiceKit
import TestSupport
import Testing

/// What a client that does not play along gets: a connection left idle or a request left half-sent is closed, and a
/// value the database cannot store is the client's 400, naming the field.
@Suite struct HostileConnectionTests {
    @Test(arguments: ["", "GET /health/live HTTP/1.1\r\nHost: lo", "POST /v1/kit/widgets HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"na"])
    func idleAndHalfSentConnectionsAreClosed(_ sent: String) async throws {
        try await KitTestApp.withApp(environment: ["HTTP_IDLE_TIMEOUT_SECONDS": "1"], testing: .live) { client in
            let connection = try RawConnection(port: try #require(client.port))
            try connection.send(sent)
            let waiting = ContinuousClock.now
            let (_, closed) = await connection.read()
            #expect(closed, "the server kept a connection open that sent \(sent.debugDescription) (\(ContinuousClock.now - waiting))")
        }
    }

    @Test func aValueTooLargeForAnIndexIsA400NamingTheField() async throws {
        try await KitTestApp.withApp { client in
            // Random, so that compression cannot bring it under a B-tree row's limit (2704 bytes), and under the
            // limit of any index row (8191 bytes), whose refusal names no index: then the field is `body`.
            let name = (0..<2000).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let body = try JSONEncoder().encode(KitTestApp.Widget(name: name, size: 1))
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(bytes: body)) { response in
                #expect(response.status == .badRequest)
                #expect(response.problem?.type == .validationFailed)
                #expect(response.problem?.errors?.map(\.field) == ["name"])
            }
        }
    }
}
