import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import HummingbirdTesting
import NIOCore
import Postgres
@testable import ServiceKit
import TestSupport
import Testing

/// Every error, the framework's own included, is problem+json with the right status, a stable type and the request id.
@Suite struct ProblemMappingTests {
    static let json: HTTPFields = [.contentType: "application/json"]

    @Test func unknownRouteIs404Problem() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/nothing-here", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[.contentType] == "application/problem+json")
                let problem = try #require(response.problem)
                #expect(problem.type == .notFound)
                #expect(problem.status == 404)
                #expect(problem.requestId == response.headers[.requestID])
                #expect(problem.instance == "/v1/kit/nothing-here")
            }
        }
    }

    @Test func wrongMethodIs405WithAllow() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/widgets", method: .delete) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "POST")
                #expect(response.problem?.type == .methodNotAllowed)
            }
            try await client.execute(uri: "/health/live", method: .put) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "GET, HEAD")
            }
        }
    }

    /// Over real HTTP, so the methods reach the router as a client sends them: TRACE (which the gateway refuses
    /// itself, with the same answer), QUERY (newer than most parsers) and an ordinary one.
    @Test(arguments: ["TRACE", "QUERY", "PUT"])
    func anyUndeclaredMethodIs405ProblemWithAllow(method: String) async throws {
        let method = try #require(HTTPRequest.Method(method))
        try await KitTestApp.withApp(testing: .live) { client in
            try await client.execute(uri: "/v1/kit/widgets/count", method: method) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "GET, HEAD")
                #expect(response.headers[.contentType] == "application/problem+json")
                let problem = try #require(response.problem)
                #expect(problem.type == .methodNotAllowed)
                #expect(problem.detail == "\(method.rawValue) is not allowed here; use GET, HEAD.")
                #expect(problem.instance == "/v1/kit/widgets/count")
                #expect(problem.requestId == response.headers[.requestID])
            }
        }
    }

    @Test func headIsAnsweredWhereverGetIs() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/health/live", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/v1/kit/widgets", method: .head) { response in
                #expect(response.status == .methodNotAllowed)  // a POST-only route
                #expect(response.headers[.allow] == "POST")
            }
        }
    }

    @Test func malformedJSONIs400() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: Self.json,
                                     body: ByteBuffer(string: #"{"name": "a", "size": "#)) { response in
                #expect(response.status == .badRequest)
                #expect(response.problem?.type == .malformedRequest)
            }
        }
    }

    @Test func invalidUTF8Is400EvenInAnIgnoredField() async throws {
        try await KitTestApp.withApp { client in
            var body = ByteBuffer(string: #"{"name": "a", "size": 1, "ignored": ""#)
            body.writeBytes([0xFF, 0xFE, 0xC3, 0x28])
            body.writeString(#""}"#)
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: Self.json, body: body) { response in
                #expect(response.status == .badRequest)
                #expect(response.problem?.type == .malformedRequest)
            }
            try await client.execute(uri: "/v1/kit/widgets/count", method: .get) { response in
                #expect(String(buffer: response.body) == #"{"count":0}"#)
            }
        }
    }

    @Test func missingAndMistypedFieldsAreListed() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: Self.json,
                                     body: ByteBuffer(string: #"{"size": 3}"#)) { response in
                #expect(response.status == .badRequest)
                #expect(response.problem?.type == .validationFailed)
                #expect(response.problem?.errors == [FieldError(field: "name", message: "is required")])
            }
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: Self.json,
                                     body: ByteBuffer(string: #"{"name": "a", "size": "big"}"#)) { response in
                #expect(response.status == .badRequest)
                #expect(response.problem?.errors == [FieldError(field: "size", message: "must be an integer")])
            }
            // Nothing was stored by the refused requests.
            try await client.execute(uri: "/v1/kit/widgets/count", method: .get) { response in
                #expect(String(buffer: response.body) == #"{"count":0}"#)
            }
        }
    }

    @Test func wrongContentTypeIs415() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: [.contentType: "text/plain"],
                                     body: ByteBuffer(string: #"{"name": "a", "size": 1}"#)) { response in
                #expect(response.status == .unsupportedMediaType)
                #expect(response.problem?.type == .unsupportedMediaType)
            }
        }
    }

    @Test func oversizedBodyIs413() async throws {
        try await KitTestApp.withApp(environment: ["HTTP_MAX_BODY_BYTES": "1024"]) { client in
            let big = #"{"name": ""# + String(repeating: "x", count: 2_000_000) + #"", "size": 1}"#
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: Self.json,
                                     body: ByteBuffer(string: big)) { response in
                #expect(response.status == .contentTooLarge)
                #expect(response.problem?.type == .payloadTooLarge)
            }
        }
    }

    @Test func unexpectedErrorsAre500WithoutInternals() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/crash", method: .get) { response in
                #expect(response.status == .internalServerError)
                #expect(response.problem?.type == .internalError)
                let body = String(buffer: response.body)
                #expect(!body.contains("hunter2"))
                #expect(!body.contains("SecretInternalError"))
            }
        }
    }

    @Test func validRequestsStillWork() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/v1/kit/widgets", method: .post, headers: Self.json,
                                     body: ByteBuffer(string: #"{"name": "Robert'); DROP TABLE widgets;--", "size": 1}"#)) {
                #expect($0.status == .created)
            }
            try await client.execute(uri: "/v1/kit/widgets/count", method: .get) { response in
                #expect(String(buffer: response.body) == #"{"count":1}"#)
            }
        }
    }
}

@Suite struct RequestIDTests {
    @Test func aSaneIncomingIDIsEchoed() async throws {
        try await KitTestApp.withApp { client in
            try await client.execute(uri: "/health/live", method: .get, headers: [.requestID: "abc-123.x"]) {
                #expect($0.headers[.requestID] == "abc-123.x")
            }
        }
    }

    @Test func aHostileIncomingIDIsReplaced() async throws {
        try await KitTestApp.withApp { client in
            let hostile = #"x"}, "admin": true, {"#
            try await client.execute(uri: "/nope", method: .get, headers: [.requestID: hostile]) { response in
                let id = try #require(response.headers[.requestID])
                #expect(id != hostile)
                #expect(UUID(uuidString: id) != nil)
                #expect(response.problem?.requestId == id)
            }
        }
    }

    @Test func everyResponseGetsAnID() async throws {
        try await KitTestApp.withApp { client in
            var seen = Set<String>()
            for _ in 0..<5 {
                try await client.execute(uri: "/health/live", method: .get) { response in
                    seen.insert(try #require(response.headers[.requestID]))
                }
            }
            #expect(seen.count == 5)
        }
    }
}

@Suite struct ErrorLoggingTests {
    struct PayloadError: Error { let password = "hunter2" }

    @Test func unknownErrorsAreLoggedByTypeOnly() {
        let metadata = ProblemMiddleware.loggable(PayloadError())
        #expect(metadata["error_type"] == "PayloadError")
        #expect(metadata["error"] == nil)
        #expect(!metadata.description.contains("hunter2"))
    }

    @Test func ourOwnErrorsAreLoggedWithTheirSafeDescriptions() {
        let metadata = ProblemMiddleware.loggable(MigrationError.edited("create_users"))
        #expect(metadata["error"] == "migration create_users was edited after it was applied")
    }
}
