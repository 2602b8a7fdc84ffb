import Contracts
import Foundation
import NIOHTTP1
import Synchronization
import TestSupport
import Testing

extension EndToEnd {
    /// One replica of every service killed (SIGKILL) while clients keep sending idempotent requests through the
    /// gateway: nginx moves each failed attempt to the surviving replica, so not one request fails.
    @Suite struct ReplicaFailureTests {
        static let killed = ["auth-service-1", "catalog-proxy-1", "favorites-service-1"]

        @Test func aReplicaKilledMidRunFailsNoIdempotentRequest() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let signUp = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: uniqueEmail("replica"), password: JourneyTests.password, experience: "rijksmuseum"))
            let app = anonymous.with(token: try signUp.decode(AuthSession.self).accessToken)
            let items = try await app.get("/v1/catalog/rijksmuseum/items?q=monet").decode(CatalogPage.self).items
            try #require(items.count >= 4)

            let tally = Tally()
            // Load for six seconds: two before the kills, four on the survivors.
            let end = ContinuousClock.now + .seconds(6)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    let item = items[worker]
                    group.addTask {
                        var round = 0
                        while ContinuousClock.now < end {
                            round += 1
                            let requests: [(String, () async throws -> StackResponse)] = [
                                ("PUT favorite", {
                                    try await app.send(.PUT, "/v1/favorites/rijksmuseum/\(item.id)",
                                                       headers: [("Idempotency-Key", "replica-\(worker)-\(round)")])
                                }),
                                ("GET ids", { try await app.get("/v1/favorites/ids?experience=rijksmuseum") }),
                                ("GET list", { try await app.get("/v1/favorites?experience=rijksmuseum") }),
                                ("GET item", { try await app.get("/v1/catalog/rijksmuseum/items/\(item.id)") }),
                                ("GET me", { try await app.get("/v1/auth/me") }),
                                ("DELETE favorite", {
                                    try await app.send(.DELETE, "/v1/favorites/rijksmuseum/\(item.id)")
                                }),
                            ]
                            for (name, request) in requests {
                                do {
                                    let response = try await request()
                                    let body = String(decoding: response.body, as: UTF8.self)
                                    tally.record(name, failed: response.status.code >= 400
                                        ? "HTTP \(response.status.code) \(body)" : nil)
                                } catch {
                                    tally.record(name, failed: "\(error)")
                                }
                            }
                        }
                    }
                }
                try await Task.sleep(for: .seconds(2))
                for name in Self.killed { try kill(name, in: stack) }
                try await group.waitForAll()
            }
            try await restartStack(stack)

            let (total, failures) = tally.snapshot()
            #expect(total > 100, "too little load to mean anything: \(total) requests")
            #expect(failures.isEmpty, "\(failures.count) of \(total) requests failed: \(failures.prefix(5))")
        }

        func kill(_ replica: String, in stack: StackUnderTest) throws {
            let pidFile = URL(fileURLWithPath: stack.runDirectory).appendingPathComponent("\(replica).pid")
            let text = try String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let pid = try #require(Int32(text), "no pid in \(pidFile.path)")
            #expect(Foundation.kill(pid, SIGKILL) == 0, "could not kill \(replica) (pid \(pid))")
        }

        /// `scripts/stack up` starts whatever is not running and waits until every service is ready again, so the
        /// tests after this one meet the full stack. It fails with the script's output if it cannot.
        func restartStack(_ stack: StackUnderTest) async throws {
            // runProgram blocks until the script exits: on a dispatch thread, not the cooperative pool.
            _ = try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(with: Result { try runProgram(stack.stackCommand, ["up"]) })
                }
            }
        }
    }
}

/// Requests made and the failed ones, from several tasks.
final class Tally: Sendable {
    private let state = Mutex((total: 0, failures: [String]()))

    func record(_ request: String, failed reason: String?) {
        state.withLock { state in
            state.total += 1
            if let reason { state.failures.append("\(request): \(reason)") }
        }
    }

    func snapshot() -> (total: Int, failures: [String]) {
        state.withLock { ($0.total, $0.failures) }
    }
}
