import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Every end-to-end suite, one test at a time: the replica test kills replicas, and a sign-in (a POST, which the
/// gateway never retries) running meanwhile would fail for a reason that is not a bug.
@Suite(.serialized, .enabled(if: StackUnderTest.current != nil, "needs the running stack: run scripts/test"))
enum EndToEnd {}

/// Where the running stack is, from the environment `scripts/test` sets after `scripts/stack up` (see
/// `run_end_to_end` there). Without `E2E_GATEWAY_URL` the suite is disabled: it needs the whole stack, which plain
/// `swift test` does not start; the test command always starts it and checks that the suite ran.
struct StackUnderTest: Sendable {
    /// The public origin (nginx).
    let gateway: String
    /// favorites-service replicas on their own ports, to write on one and read on another.
    let favoritesReplicas: [String]
    /// favorites-service's database role, to check what erasure left behind.
    let favoritesDatabaseURL: String
    /// The stack's pid files (`<service>-<n>.pid`), to kill replicas.
    let runDirectory: String
    /// `scripts/stack`, to bring killed replicas back.
    let stackCommand: String

    static let current: StackUnderTest? = {
        let environment = ProcessInfo.processInfo.environment
        guard let gateway = environment["E2E_GATEWAY_URL"], !gateway.isEmpty else { return nil }
        return StackUnderTest(
            gateway: gateway,
            favoritesReplicas: (environment["E2E_FAVORITES_REPLICAS"] ?? "").split(separator: ",").map(String.init),
            favoritesDatabaseURL: environment["E2E_FAVORITES_DATABASE_URL"] ?? "",
            runDirectory: environment["E2E_RUN_DIR"] ?? "",
            stackCommand: environment["E2E_STACK_COMMAND"] ?? ""
        )
    }()

    static func required() throws -> StackUnderTest {
        guard let current else { throw StackError("E2E_GATEWAY_URL is not set (run scripts/test)") }
        return current
    }
}

struct StackError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A response as the tests look at it.
struct StackResponse: Sendable {
    let status: HTTPResponseStatus
    let headers: HTTPHeaders
    let body: Data

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(type, from: body)
        } catch {
            throw StackError("HTTP \(status.code): cannot decode \(type): \(String(decoding: body, as: UTF8.self))")
        }
    }

    var problem: ProblemDetails? { try? decode(ProblemDetails.self) }
}

/// Plain HTTP/1.1 calls over AsyncHTTPClient, the way an app would make them.
struct StackClient: Sendable {
    let baseURL: String
    var token: String?

    init(_ baseURL: String, token: String? = nil) {
        self.baseURL = baseURL
        self.token = token
    }

    func with(token: String?) -> StackClient { StackClient(baseURL, token: token) }

    func send(
        _ method: HTTPMethod, _ path: String, json: (any Encodable & Sendable)? = nil,
        headers extra: [(String, String)] = []
    ) async throws -> StackResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let json {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try encoder.encode(json)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 4 * 1024 * 1024)
        return StackResponse(status: response.status, headers: response.headers,
                             body: Data(body.readableBytesView))
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> StackResponse {
        try await send(.GET, path, headers: headers)
    }
}

/// A fresh address per test run, so journeys never meet each other's accounts.
func uniqueEmail(_ label: String) -> String {
    "e2e-\(label)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
}
