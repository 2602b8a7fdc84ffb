import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

/// The journeys through the running stack, side by side: each test has users of its own and changes nothing the others
/// read. What breaks the stack (killed replicas, a crashed database, a failing upstream) is in ``FaultInjection``,
/// which `scripts/test` runs after this suite, one test at a time.
@Suite(.enabled(if: StackUnderTest.current != nil, "needs the running stack: run scripts/test"))
enum EndToEnd {}

/// Where the running stack is, from the environment `scripts/test` sets after `scripts/stack up` (see
/// `run_end_to_end` there). Without `E2E_GATEWAY_URL` the suite is disabled: it needs the whole stack, which plain
/// `swift test` does not start; the test command always starts it and checks that the suite ran.
struct StackUnderTest: Sendable {
    /// The public origin (nginx).
    let gateway: String
    /// favorites-service replicas on their own ports, to write on one and read on another.
    let favoritesReplicas: [String]
    /// catalog-proxy replicas on their own ports, to fill each one's cache.
    let catalogReplicas: [String]
    /// The longest catalog-proxy may take to answer when its upstream fails: every attempt's timeout and the pauses
    /// between them, as the stack is configured.
    let catalogTimeBudget: Duration
    /// favorites-service's database role, to check what erasure left behind.
    let favoritesDatabaseURL: String
    /// The stack's pid files (`<service>-<n>.pid`), to kill replicas.
    let runDirectory: String
    /// `scripts/stack`, to bring killed replicas back.
    let stackCommand: String
    /// The replay upstream's control endpoint (`/__replay/faults`), to inject upstream faults.
    let replayURL: String
    /// Where the stack's mail server stores what auth-service sends (a Maildir's `new/`), to follow the links.
    let inbox: URL
    /// The spans the stack's OTLP receiver got, one JSON object per line.
    let spans: URL
    /// The gateway's burst of sign-in requests per client address (STACK_SIGNIN_BURST), and how many it refills a
    /// second (STACK_SIGNIN_RATE).
    let signInBurst: Int
    let signInRefillPerSecond: Int

    static let current: StackUnderTest? = {
        let environment = ProcessInfo.processInfo.environment
        guard let gateway = environment["E2E_GATEWAY_URL"], !gateway.isEmpty else { return nil }
        return StackUnderTest(
            gateway: gateway,
            favoritesReplicas: (environment["E2E_FAVORITES_REPLICAS"] ?? "").split(separator: ",").map(String.init),
            catalogReplicas: (environment["E2E_CATALOG_REPLICAS"] ?? "").split(separator: ",").map(String.init),
            catalogTimeBudget: .milliseconds(Int(environment["E2E_CATALOG_TIME_BUDGET_MS"] ?? "") ?? 0),
            favoritesDatabaseURL: environment["E2E_FAVORITES_DATABASE_URL"] ?? "",
            runDirectory: environment["E2E_RUN_DIR"] ?? "",
            stackCommand: environment["E2E_STACK_COMMAND"] ?? "",
            replayURL: environment["E2E_REPLAY_URL"] ?? "",
            inbox: URL(fileURLWithPath: environment["E2E_MAILDIR"] ?? ""),
            spans: URL(fileURLWithPath: environment["E2E_SPANS"] ?? ""),
            signInBurst: Int(environment["E2E_SIGNIN_BURST"] ?? "") ?? 20,
            signInRefillPerSecond: Int((environment["E2E_SIGNIN_RATE"] ?? "").prefix { $0.isNumber }) ?? 5
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
        headers: [(String, String)] = []
    ) async throws -> StackResponse {
        guard let json else { return try await send(method, path, body: nil, headers: headers) }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return try await send(method, path, body: try encoder.encode(json),
                              headers: [("Content-Type", "application/json")] + headers)
    }

    /// Sends `body` as it is (the caller sets its `Content-Type`): for bytes no encoder would produce.
    func send(_ method: HTTPMethod, _ path: String, body: Data?, headers: [(String, String)] = [])
        async throws -> StackResponse
    {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 4 * 1024 * 1024)
        return StackResponse(status: response.status, headers: response.headers,
                             body: Data(body.readableBytesView))
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> StackResponse {
        try await send(.GET, path, headers: headers)
    }

    /// A catalog page asked for again while it comes partial, as an app does: a cold page of museum objects may
    /// outlast the page deadline, and what it left out is resolved meanwhile for the next request.
    func wholePage(_ path: String) async throws -> CatalogPage {
        try await eventually { try await get(path).decode(CatalogPage.self) } until: { !$0.partial }
    }
}

/// The password of every account the suites sign up.
let accountPassword = "correct horse battery staple"

/// A fresh address per test run, so journeys never meet each other's accounts.
func uniqueEmail(_ label: String) -> String {
    "e2e-\(label)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
}
