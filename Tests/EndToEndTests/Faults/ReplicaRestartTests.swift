import Contracts
import Foundation
import NIOHTTP1
import Testing

extension FaultInjection {
    /// Replicas dying and being replaced under load: first one replica of every service killed (SIGKILL) and brought
    /// back, then a rolling restart of every replica with SIGTERM, one at a time, as a deployment does it. nginx
    /// moves a failed idempotent request to another replica and a draining replica finishes what it accepted, so not
    /// one idempotent request may fail; a non-idempotent one (PATCH, which nginx never resends once sent) may fail
    /// only rarely: under 0.1 %.
    @Suite struct ReplicaRestartTests {
        static let workers = 4

        @Test func killedAndRestartedReplicasFailNoIdempotentRequest() async throws {
            let stack = try StackUnderTest.required()
            let (probe, _) = try await FaultInjection.signedInClient(stack, experience: .rijksmuseum, label: "replica")
            let items = try await probe.get("/v1/catalog/rijksmuseum/items?q=rembrandt").decode(CatalogPage.self).items
            try #require(items.count >= 4)
            var clients: [(StackClient, FavoriteToggler)] = []
            for worker in 0..<Self.workers {
                let (client, user) = try await FaultInjection.signedInClient(stack, experience: .rijksmuseum,
                                                                             label: "replica-\(worker)")
                clients.append((client, FavoriteToggler(client: client, user: user, experience: .rijksmuseum,
                                                        items: [items[worker].id], label: "replica-\(worker)-\(user)")))
            }
            let replicas = try await stack.replicas()
            try #require(replicas.count >= 6, "needs two replicas of each service: \(replicas)")

            let idempotent = Tally()
            let nonIdempotent = Tally()
            let load = LoadSwitch()
            let finished = try await withThrowingTaskGroup(of: FavoriteToggler.self) { group in
                for (client, toggler) in clients {
                    group.addTask {
                        var toggler = toggler
                        let item = toggler.items[0]
                        var round = 0
                        while load.isOn {
                            round += 1
                            try await toggler.next(tally: idempotent, giveUpAt: .now + .seconds(30))
                            for path in ["/v1/favorites/ids?experience=rijksmuseum", "/v1/favorites?experience=rijksmuseum",
                                         "/v1/catalog/rijksmuseum/items/\(item)", "/v1/auth/me"] {
                                await Self.record("GET \(path)", in: idempotent) { try await client.get(path) }
                            }
                            await Self.record("PATCH /v1/auth/me", in: nonIdempotent) {
                                try await client.send(.PATCH, "/v1/auth/me",
                                                      json: ProfileUpdate(preferences: ["round": "\(round)"]))
                            }
                        }
                        return toggler
                    }
                }
                try await Task.sleep(for: .seconds(FaultInjection.loadSeconds) / 3)
                // Phase 1: one replica of every service killed outright, then replaced.
                for replica in replicas where replica.hasSuffix("-1") { try await stack.stop(replica, with: SIGKILL) }
                try await Task.sleep(for: .seconds(1))
                try await stack.stack("up")
                // Phase 2: a rolling restart, each replica drained (SIGTERM) and started again before the next.
                for replica in replicas {
                    try await stack.stop(replica, with: SIGTERM)
                    try await stack.stack("up")
                }
                try await Task.sleep(for: .seconds(FaultInjection.loadSeconds) / 3)
                load.turnOff()
                return try await group.reduce(into: []) { $0.append($1) }
            }

            let differences = try await FavoriteToggler.differencesInStore(of: finished, in: stack)
            let (idempotentTotal, idempotentFailures) = idempotent.snapshot()
            let (patchTotal, patchFailures) = nonIdempotent.snapshot()
            let total = idempotentTotal + patchTotal
            let failed = idempotentFailures.count + patchFailures.count
            FaultInjection.report("replica kill and rolling restart", """
                \(replicas.count) replicas: one of each service killed, then all restarted one by one with SIGTERM; \
                \(idempotentTotal) idempotent requests, \(idempotentFailures.count) failed; \(patchTotal) PATCH \
                requests, \(patchFailures.count) failed; \(String(format: "%.3f", Double(failed) * 100 / Double(max(total, 1)))) % \
                of all requests failed; \
                \(differences.isEmpty ? "log and view match every acknowledged favorite command" : "\(differences.count) users differ")
                """)
            #expect(total > 200, "too little load to mean anything: \(total) requests")
            #expect(idempotentFailures.isEmpty, "\(idempotentFailures.count) of \(idempotentTotal) idempotent requests failed: \(idempotentFailures.prefix(5))")
            #expect(failed * 1000 < total, "\(failed) of \(total) requests failed: \(patchFailures.prefix(5))")
            #expect(differences.isEmpty, "\(differences.prefix(5))")
        }

        static func record(_ name: String, in tally: Tally, _ request: () async throws -> StackResponse) async {
            do {
                let response = try await request()
                tally.record(name, failed: response.status.code >= 400
                    ? "HTTP \(response.status.code) \(String(decoding: response.body.prefix(300), as: UTF8.self))" : nil)
            } catch {
                tally.record(name, failed: "\(error)")
            }
        }
    }
}
