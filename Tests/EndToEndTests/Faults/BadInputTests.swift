import Contracts
import Foundation
import NIOHTTP1
import Postgres
import TestSupport
import Testing

extension FaultInjection {
    /// Hostile and broken input against every public operation, through the gateway: oversized bodies, deep JSON
    /// nesting, wrong types, invalid UTF-8, huge numbers, SQL and path-traversal strings, unknown enum values, bad
    /// tokens. Each must be refused with a 4xx problem document, never a 5xx, and change nothing: the signed-in user
    /// who sent them has no events, the same profile and a working session afterwards, and no account exists for
    /// the sign-ups that were refused.
    @Suite struct BadInputTests {
        enum Expectation: Sendable {
            /// Bad input: a 4xx problem.
            case refused
            /// Unusual but legitimate (a search for a SQL string): anything but a 5xx, and a problem if it is a 4xx.
            case harmless
        }

        struct Case: Sendable {
            var method: HTTPMethod
            var path: String
            var body: Data?
            var contentType = "application/json"
            var headers: [(String, String)] = []
            var authenticated = true
            var expectation = Expectation.refused
        }

        static let refusedEmail = "corpus-refused-\(UUID().uuidString.prefix(8).lowercased())@example.com"

        @Test func hostileInputIsAlwaysA4xxProblemAndStoresNothing() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let session = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: uniqueEmail("corpus"), password: accountPassword, experience: "ticketmaster"))
                .decode(AuthSession.self)
            let app = anonymous.with(token: session.accessToken)
            let profileBefore = try await app.get("/v1/auth/me").decode(UserProfile.self)

            let cases = Self.corpus(refreshToken: session.refreshToken)
            var problems: [String] = []
            var statuses: [UInt: Int] = [:]
            for (index, testCase) in cases.enumerated() {
                // Sign-in and sign-up share a per-address budget at the gateway (10/s): stay under it, so these
                // reach auth-service's own validation rather than the gateway's 429.
                if testCase.path.hasPrefix("/v1/auth/login") || testCase.path.hasPrefix("/v1/auth/signup") {
                    try await Task.sleep(for: .milliseconds(150))
                }
                let client = testCase.authenticated ? app : anonymous
                let response = try await client.send(
                    testCase.method, testCase.path, body: testCase.body,
                    headers: (testCase.body == nil ? [] : [("Content-Type", testCase.contentType)]) + testCase.headers)
                statuses[response.status.code, default: 0] += 1
                let label = "#\(index) \(testCase.method) \(testCase.path.prefix(90)) (\(testCase.body?.count ?? 0) bytes)"
                switch testCase.expectation {
                case .refused where !(400..<500).contains(response.status.code) || !response.isProblem:
                    problems.append("\(label) → \(response.status.code) \(String(decoding: response.body.prefix(200), as: UTF8.self))")
                case .harmless where response.status.code >= 500 || (response.status.code >= 400 && !response.isProblem):
                    problems.append("\(label) → \(response.status.code)")
                default:
                    break
                }
            }

            // Nothing changed for the user who sent all this, and the refused sign-ups made no account.
            let profileAfter = try await app.get("/v1/auth/me")
            let events = try await stack.withFavoritesDatabase { pool in
                try await pool.query("""
                    SELECT count(*) FROM favorites.events WHERE stream_id = \("user-" + session.user.id.uuidString.lowercased())
                    """).scalar(Int.self)
            }
            let refusedSignIn = try await anonymous.send(.POST, "/v1/auth/login", json: SignInRequest(
                email: Self.refusedEmail, password: accountPassword))
            FaultInjection.report("bad input", """
                \(cases.count) hostile requests over every public operation; answers \
                \(statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")); \
                \(problems.count) not a 4xx problem; events stored for the sender: \(events)
                """)
            #expect(problems.isEmpty, "\(problems.count) answers were not 4xx problems: \(problems.prefix(10))")
            #expect(events == 0, "hostile requests stored \(events) events")
            #expect(profileAfter.status == HTTPResponseStatus.ok, "the sender's session stopped working")
            #expect(try profileAfter.decode(UserProfile.self) == profileBefore, "hostile requests changed the profile")
            #expect(refusedSignIn.problem?.type == .invalidCredentials, "a refused sign-up created an account")
        }

        /// What the gateway refuses on its own is a problem document too, and its sign-in budget holds for every
        /// spelling of the path that reaches sign-in.
        @Test func theGatewayRefusesWithProblemsAndLimitsEverySpellingOfSignIn() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let trace = try await anonymous.send(.TRACE, "/v1/auth/me", body: nil)
            #expect(trace.status.code == 405)
            #expect(trace.problem?.type == .methodNotAllowed)
            let longHeader = try await anonymous.get("/v1/catalog/experiences",
                                                     headers: [("X-Filler", String(repeating: "a", count: 10_000))])
            #expect(longHeader.status.code == 400)
            #expect(longHeader.problem?.type == .malformedRequest)

            // Sign-ins with a trailing slash, which auth-service routes to sign-in, 64 in flight at all times until
            // the gateway refuses one: past the burst they arrive faster than the limit refills, however busy the
            // machine is. The cap only ends a run whose gateway never limits.
            let cap = 10 * stack.signInBurst
            var sent = 0, limited = 0
            try await withThrowingTaskGroup(of: StackResponse.self) { group in
                func sendOne() {
                    sent += 1
                    group.addTask {
                        try await anonymous.send(.POST, "/v1/auth/login/", body: Data("{}".utf8),
                                                 headers: [("Content-Type", "application/json")])
                    }
                }
                for _ in 0..<64 { sendOne() }
                while let response = try await group.next() {
                    #expect(response.isProblem)
                    if response.problem?.type == .rateLimited { limited += 1 }
                    if limited == 0 && sent < cap { sendOne() }
                }
            }
            #expect(limited > 0, "the gateway let \(sent) sign-ins with a trailing slash through")
            // The budget refills, whole, for the suites after this one (they sign users up from the same address).
            let refilled = try await eventually({
                try await anonymous.send(.POST, "/v1/auth/login/", body: Data("{}".utf8),
                                         headers: [("Content-Type", "application/json")]).problem?.type
            }, until: { $0 != .rateLimited })
            #expect(refilled == .validationFailed)
            try await Task.sleep(for: .seconds(Double(stack.signInBurst) / Double(stack.signInRefillPerSecond)))
        }

        /// The requests, operation by operation.
        static func corpus(refreshToken: String) -> [Case] {
            var cases: [Case] = []
            let sql = "' OR '1'='1'; DROP TABLE favorites.events; --"
            let sqlInPath = "%27%20OR%20%271%27%3D%271%27%3B%20DROP%20TABLE%20events%3B--"
            let traversal = ["..%2F..%2F..%2Fetc%2Fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "..%5C..%5Cwindows"]
            let hugeNumbers = ["1e400", "99999999999999999999999999", "-1", "0x10", "NaN"]

            // Bodies every JSON operation refuses, whatever its fields.
            let deepArray = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
            let deepObject = Data((String(repeating: "{\"a\":", count: 20_000) + "1" + String(repeating: "}", count: 20_000)).utf8)
            let oversized = Data(("{\"email\":\"" + String(repeating: "a", count: 1_500_000) + "\"}").utf8)
            let invalidUTF8 = Data(#"{"email":"a"#.utf8) + Data([0xFF, 0xFE, 0xC3, 0x28]) + Data(#"@example.com","password":"x","refreshToken":"x"}"#.utf8)
            let wrongTypes = Data(#"{"email":12,"password":["x"],"experience":{"a":1},"refreshToken":5,"deviceName":7,"preferences":"dark","currentPassword":false,"newPassword":1e3}"#.utf8)
            let hugeNumber = Data(#"{"email":1e999999,"password":123456789012345678901234567890,"experience":-1e400,"refreshToken":1e400}"#.utf8)
            let broken: [Data] = [deepArray, deepObject, oversized, invalidUTF8, wrongTypes, hugeNumber,
                                  Data("[]".utf8), Data("\"text\"".utf8), Data("null".utf8), Data("{".utf8), Data()]
            let bodyOperations: [(HTTPMethod, String)] = [
                (.POST, "/v1/auth/signup"), (.POST, "/v1/auth/login"), (.POST, "/v1/auth/refresh"),
                (.POST, "/v1/auth/logout"), (.PATCH, "/v1/auth/me"), (.DELETE, "/v1/auth/me"),
                (.POST, "/v1/auth/me/password"),
            ]
            for (method, path) in bodyOperations {
                for body in broken { cases.append(Case(method: method, path: path, body: body)) }
                cases.append(Case(method: method, path: path, body: Data(#"{"refreshToken":"x"}"#.utf8),
                                  contentType: "text/plain"))
            }

            // Valid JSON with hostile or unknown values.
            func json(_ text: String) -> Data { Data(text.utf8) }
            cases += [
                Case(method: .POST, path: "/v1/auth/signup", body: json(#"{"email":"\#(refusedEmail)","password":"correct horse battery staple","experience":"netflix"}"#), authenticated: false),
                Case(method: .POST, path: "/v1/auth/signup", body: json(#"{"email":"\#(refusedEmail)","password":"correct horse battery staple","experience":"ticketmaster'; DROP TABLE auth.users; --"}"#), authenticated: false),
                Case(method: .POST, path: "/v1/auth/signup", body: json(#"{"email":"\#(sql)","password":"correct horse battery staple","experience":"ticketmaster"}"#), authenticated: false),
                Case(method: .POST, path: "/v1/auth/signup", body: json(#"{"email":"../../etc/passwd","password":"correct horse battery staple","experience":"ticketmaster"}"#), authenticated: false),
                Case(method: .POST, path: "/v1/auth/login", body: json(#"{"email":"\#(sql)","password":"\#(sql)"}"#), authenticated: false),
                Case(method: .POST, path: "/v1/auth/refresh", body: json(#"{"refreshToken":"\#(sql)"}"#), authenticated: false),
                Case(method: .POST, path: "/v1/auth/logout?scope=everything", body: json(#"{"refreshToken":"\#(refreshToken)"}"#)),
                Case(method: .POST, path: "/v1/auth/logout?scope=\(sqlInPath)", body: json(#"{"refreshToken":"\#(refreshToken)"}"#)),
                Case(method: .PATCH, path: "/v1/auth/me", body: json(#"{"experience":"netflix"}"#)),
                Case(method: .PATCH, path: "/v1/auth/me", body: json(#"{"experience":"\#(sql)"}"#)),
                Case(method: .PATCH, path: "/v1/auth/me", body: json(#"{"preferences":{"\#(sql)":"x"}}"#)),
                Case(method: .PATCH, path: "/v1/auth/me", body: json(#"{"preferences":{"theme":"\#(String(repeating: "x", count: 300))"}}"#)),
                Case(method: .PATCH, path: "/v1/auth/me", body: json(#"{"role":"admin","userId":"00000000-0000-0000-0000-000000000000"}"#)),
                Case(method: .DELETE, path: "/v1/auth/me", body: json(#"{"password":"\#(sql)"}"#)),
                Case(method: .POST, path: "/v1/auth/me/password", body: json(#"{"currentPassword":"\#(sql)","newPassword":"another long passphrase"}"#)),
            ]

            // Path parameters.
            for experience in ["netflix", sqlInPath, "%00", "%FF%FE"] + traversal {
                cases.append(Case(method: .GET, path: "/v1/catalog/\(experience)/items?q=x"))
                cases.append(Case(method: .GET, path: "/v1/catalog/\(experience)/items/1"))
                cases.append(Case(method: .PUT, path: "/v1/favorites/\(experience)/1"))
                cases.append(Case(method: .DELETE, path: "/v1/favorites/\(experience)/1"))
            }
            for id in [sqlInPath, "%00", "%FF%FE", String(repeating: "x", count: 300)] + traversal {
                cases.append(Case(method: .GET, path: "/v1/catalog/ticketmaster/items/\(id)"))
                cases.append(Case(method: .PUT, path: "/v1/favorites/ticketmaster/\(id)"))
                cases.append(Case(method: .DELETE, path: "/v1/favorites/rijksmuseum/\(id)", expectation: .harmless))
                cases.append(Case(method: .DELETE, path: "/v1/auth/sessions/\(id)"))
            }
            cases.append(Case(method: .PUT, path: "/v1/favorites/ticketmaster/G5diZfkn0B-bh",
                              headers: [("Idempotency-Key", String(repeating: "k", count: 1000))]))

            // Query parameters.
            for value in hugeNumbers + ["abc", sqlInPath] {
                cases.append(Case(method: .GET, path: "/v1/favorites/changes?since=\(value)"))
                // A limit of digits only is a page size however many there are (the largest page past the maximum).
                guard !value.allSatisfy(\.isNumber) else { continue }
                cases.append(Case(method: .GET, path: "/v1/catalog/ticketmaster/items?q=x&limit=\(value)"))
                cases.append(Case(method: .GET, path: "/v1/favorites?experience=ticketmaster&limit=\(value)"))
                cases.append(Case(method: .GET, path: "/v1/favorites/popular?experience=ticketmaster&limit=\(value)"))
            }
            for experience in ["netflix", sqlInPath, "%FF%FE", ""] {
                for path in ["/v1/favorites", "/v1/favorites/ids", "/v1/favorites/popular"] {
                    cases.append(Case(method: .GET, path: "\(path)?experience=\(experience)"))
                }
                cases.append(Case(method: .DELETE, path: "/v1/favorites?experience=\(experience)"))
            }
            cases += [
                Case(method: .GET, path: "/v1/favorites"), Case(method: .DELETE, path: "/v1/favorites"),
                Case(method: .GET, path: "/v1/favorites?experience=ticketmaster&sort=\(sqlInPath)"),
                Case(method: .GET, path: "/v1/favorites?experience=ticketmaster&sort=popularity"),
                Case(method: .GET, path: "/v1/favorites?experience=ticketmaster&cursor=\(sqlInPath)"),
                Case(method: .GET, path: "/v1/favorites?experience=ticketmaster&cursor=\(String(repeating: "A", count: 2000))"),
                Case(method: .GET, path: "/v1/catalog/ticketmaster/items?q="),
                Case(method: .GET, path: "/v1/catalog/ticketmaster/items?q=\(String(repeating: "x", count: 101))"),
                Case(method: .GET, path: "/v1/catalog/ticketmaster/items?q=x&cursor=\(sqlInPath)"),
                Case(method: .GET, path: "/v1/catalog/ticketmaster/items?q=\(sqlInPath)", expectation: .harmless),
                Case(method: .GET, path: "/v1/catalog/rijksmuseum/items?q=%FF%FE", expectation: .harmless),
            ]

            // Tokens that are not ours, on an operation of every service.
            let forged = ["Bearer \(sql)", "Bearer " + String(repeating: "a", count: 6000), "Basic YTpi",
                          "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "Bearer ../../etc/passwd"]
            for authorization in forged {
                for path in ["/v1/auth/me", "/v1/catalog/ticketmaster/items?q=x", "/v1/favorites/ids?experience=ticketmaster"] {
                    cases.append(Case(method: .GET, path: path, headers: [("Authorization", authorization)],
                                      authenticated: false))
                }
            }
            return cases
        }
    }
}
