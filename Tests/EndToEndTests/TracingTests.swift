import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import Testing

extension EndToEnd {
    /// One trace across every hop, as the stack's real OTLP receiver collects it.
    @Suite struct TracingTests {
        /// A span as scripts/otlp-sink.py writes it.
        struct ReceivedSpan: Decodable {
            var service: String
            var name: String
            var kind: Int  // OTLP: 2 server, 3 client
            var traceId: String
            var spanId: String
            var parentSpanId: String
            var attributes: [String: AttributeValue]

            enum AttributeValue: Decodable {
                case text(String), other

                init(from decoder: any Decoder) throws {
                    self = (try? decoder.singleValueContainer().decode(String.self)).map(Self.text) ?? .other
                }

                var text: String? { if case .text(let value) = self { value } else { nil } }
            }

            var isServer: Bool { kind == 2 }
            var isClient: Bool { kind == 3 }
        }

        /// A favorite written through the gateway in a trace the client started: favorites-service's request, its
        /// SQL and its call to catalog-proxy, catalog-proxy's request and its call to the upstream all carry that
        /// trace id, each span under its caller's.
        @Test func aFavoriteWriteIsOneTraceFromTheGatewayToTheUpstreamAndTheDatabase() async throws {
            let stack = try StackUnderTest.required()
            let session = try await StackClient(stack.gateway).send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: uniqueEmail("traced"), password: accountPassword, experience: "rijksmuseum"))
                .decode(AuthSession.self)
            let app = StackClient(stack.gateway, token: session.accessToken)
            // An artwork no other test favorites or finds in a search (their searches resolve what they list, and a
            // favorite keeps its item's copy for a while): neither service has it at hand, so catalog-proxy asks the
            // museum (the replay upstream) for it.
            let traceID = (0..<2).map { _ in String(format: "%016llx", UInt64.random(in: 1...UInt64.max)) }.joined()
            let written = try await app.send(.PUT, "/v1/favorites/rijksmuseum/NG-MC-1365",
                                             headers: [("traceparent", "00-\(traceID)-00f067aa0ba902b7-01")])
            #expect(written.status == .created)

            let replayPort = try #require(URL(string: stack.replayURL)?.port)
            func isCatalogCall(_ span: ReceivedSpan) -> Bool {
                span.service == "favorites-service" && span.isClient
                    && span.attributes["url.path"]?.text?.hasPrefix("/v1/catalog/rijksmuseum/items/") == true
            }
            func isUpstreamCall(_ span: ReceivedSpan) -> Bool {
                span.service == "catalog-proxy" && span.isClient
                    && span.attributes["url.full"]?.text?.contains(":\(replayPort)/") == true
            }
            func isSQL(_ span: ReceivedSpan) -> Bool {
                span.service == "favorites-service" && span.attributes["db.system.name"] != nil
            }
            // Batches arrive in any order: wait for every span the assertions look at.
            let spans = try await eventually({ try Self.spans(in: stack, trace: traceID) }, until: { spans in
                spans.contains { $0.service == "favorites-service" && $0.isServer }
                    && spans.contains { $0.service == "catalog-proxy" && $0.isServer }
                    && spans.contains(where: isCatalogCall) && spans.contains(where: isUpstreamCall)
                    && spans.contains(where: isSQL)
            })
            let byID = Dictionary(spans.map { ($0.spanId, $0) }, uniquingKeysWith: { first, _ in first })
            let favoritesRequest = try #require(spans.first { $0.service == "favorites-service" && $0.isServer },
                                                "no favorites-service server span in \(spans.map(\.name))")
            #expect(favoritesRequest.parentSpanId == "00f067aa0ba902b7")  // the client's span
            let catalogCall = try #require(spans.first(where: isCatalogCall), "no catalog call in \(spans.map(\.name))")
            let catalogRequest = try #require(spans.first { $0.service == "catalog-proxy" && $0.isServer })
            #expect(catalogRequest.parentSpanId == catalogCall.spanId)
            let upstreamCall = try #require(spans.first(where: isUpstreamCall), "no upstream call in \(spans.map(\.name))")
            #expect(Self.ancestors(of: upstreamCall, in: byID).contains(catalogRequest.spanId))
            let sql = spans.filter(isSQL)
            #expect(!sql.isEmpty)
            for statement in sql {
                #expect(Self.ancestors(of: statement, in: byID).contains(favoritesRequest.spanId))
                // Statement text with placeholders, never the values bound to them.
                #expect(statement.attributes["db.query.text"]?.text?.contains(session.user.id.uuidString.lowercased())
                    != true)
            }
            // The request's log line carries the trace and its span, so logs and traces find each other.
            let logs = URL(fileURLWithPath: stack.runDirectory).deletingLastPathComponent().appendingPathComponent("logs")
            let logged = try FileManager.default.contentsOfDirectory(atPath: logs.path)
                .filter { $0.hasPrefix("favorites-service-") }
                .flatMap { name -> [Substring] in
                    let text = (try? String(contentsOf: logs.appendingPathComponent(name), encoding: .utf8)) ?? ""
                    return text.split(separator: "\n").filter { $0.contains("\"trace_id\":\"\(traceID)\"") }
                }
            #expect(logged.contains { $0.contains("\"span_id\":\"\(favoritesRequest.spanId)\"") && $0.contains("\"status\":\"201\"") })
        }

        static func spans(in stack: StackUnderTest, trace: String) throws -> [ReceivedSpan] {
            let text = (try? String(contentsOf: stack.spans, encoding: .utf8)) ?? ""
            return try text.split(separator: "\n").filter { $0.contains(trace) }.map {
                try JSONDecoder().decode(ReceivedSpan.self, from: Data($0.utf8))
            }
        }

        /// The ids of the span's parent, its parent's, and so on, as far as the spans received go.
        static func ancestors(of span: ReceivedSpan, in byID: [String: ReceivedSpan]) -> [String] {
            var chain: [String] = []
            var next = span.parentSpanId
            while !next.isEmpty, !chain.contains(next) {
                chain.append(next)
                guard let parent = byID[next] else { break }
                next = parent.parentSpanId
            }
            return chain
        }
    }
}
