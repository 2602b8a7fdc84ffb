import Contracts
import Foundation
import NIOHTTP1
import ServiceKit
import Testing

extension EndToEnd {
    /// Every 405 through the gateway names the methods its path accepts (RFC 9110 §15.5.6), whoever answers it: nginx
    /// refuses TRACE itself (its Allow comes from the gateway's own table), a service refuses any other undeclared
    /// method (its Allow from its router's routes). Both must agree with the published document for every path in it.
    @Suite struct MethodNotAllowedTests {
        @Test func everyDocumentedPathAnswersAnUndeclaredMethodWith405AndAllow() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let paths = try Self.documentedPaths()
            #expect(!paths.isEmpty)
            for (path, declared) in paths {
                let allow = Self.allowHeader(declared)
                let undeclared = try #require(Self.ordinaryMethods.first { !declared.contains($0.rawValue) })
                for method in [HTTPMethod.TRACE, .RAW(value: "QUERY"), undeclared] {
                    let response = try await anonymous.send(method, Self.concrete(path), body: nil)
                    let label = "\(method) \(path)"
                    #expect(response.status == .methodNotAllowed, "\(label)")
                    #expect(response.headers.first(name: "Allow") == allow, "\(label)")
                    #expect(response.headers.first(name: "Content-Type") == ProblemDetails.mediaType, "\(label)")
                    #expect(response.problem?.type == .methodNotAllowed, "\(label)")
                    #expect(response.problem?.detail == "\(method.rawValue) is not allowed here; use \(allow).",
                            "\(label)")
                    #expect(response.problem?.requestId == response.headers.first(name: "X-Request-ID"), "\(label)")
                }
            }
        }

        static let ordinaryMethods: [HTTPMethod] = [.PUT, .POST, .PATCH, .DELETE, .GET]

        /// Each path of the document with its methods, upper-cased.
        static func documentedPaths() throws -> [(path: String, methods: Set<String>)] {
            let object = try JSONSerialization.jsonObject(with: APIDocument.openAPIJSON())
            let paths = try #require((object as? [String: Any])?["paths"] as? [String: [String: Any]])
            let methods = ["get", "put", "post", "delete", "patch"]
            return paths.keys.sorted().map { path in
                (path, Set(methods.filter { paths[path]?[$0] != nil }.map { $0.uppercased() }))
            }
        }

        /// What a service's router answers in `Allow`: the methods sorted, HEAD wherever GET is.
        static func allowHeader(_ declared: Set<String>) -> String {
            (declared.contains("GET") ? declared.union(["HEAD"]) : declared).sorted().joined(separator: ", ")
        }

        /// The path with a value in each parameter: an experience where one is expected, any id elsewhere (the 405
        /// comes before any lookup).
        static func concrete(_ path: String) -> String {
            path.replacingOccurrences(of: "{experience}", with: ExperienceID.ticketmaster.rawValue)
                .replacingOccurrences(of: #"\{[^}]+\}"#, with: "sample", options: .regularExpression)
        }
    }
}
