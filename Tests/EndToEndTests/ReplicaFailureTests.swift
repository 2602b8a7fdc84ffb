import Contracts
import Foundation
import NIOHTTP1
import Synchronization
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
        /// tests after this one meet the full stack. Its output goes to the stack's logs.
        func restartStack(_ stack: StackUnderTest) async throws {
            let log = URL(fileURLWithPath: stack.runDirectory).deletingLastPathComponent()
                .appendingPathComponent("logs/stack-restart.log").path
            let status = try await run(stack.stackCommand, ["up"], output: log)
            #expect(status == 0, "scripts/stack up did not bring the killed replicas back (see \(log))")
        }

        /// posix_spawn and a blocking waitpid on a dispatch thread. Foundation's Process never noticed the child's exit
        /// inside the test runner (the child stayed a zombie), so it is not used here.
        func run(_ command: String, _ arguments: [String], output: String) async throws -> Int32 {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let argv = ([command] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, command, &actions, nil, argv, environ)
            guard spawned == 0 else { throw StackError("cannot start \(command): error \(spawned)") }
            let child = pid
            return await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    var status: Int32 = 0
                    while waitpid(child, &status, 0) == -1 && errno == EINTR {}
                    // WEXITSTATUS, which Swift does not import: the exit code sits in bits 8–15 of a normal exit.
                    continuation.resume(returning: status & 0x7f == 0 ? (status >> 8) & 0xff : -1)
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
