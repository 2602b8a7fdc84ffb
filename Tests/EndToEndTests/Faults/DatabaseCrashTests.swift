import Contracts
import Foundation
import NIOHTTP1
import Testing

extension FaultInjection {
    /// PostgreSQL killed (SIGKILL, postmaster and backends) while users favorite and unfavorite through the gateway,
    /// then started again. Every command an app was told succeeded must be in the event log and the view, exactly
    /// once; commands retried with their key must not apply twice; the services must serve again by themselves.
    @Suite struct DatabaseCrashTests {
        static let users = 6
        static let outage = Duration.seconds(2)

        @Test func acknowledgedWritesSurviveADatabaseCrash() async throws {
            let stack = try StackUnderTest.required()
            let (probe, _) = try await FaultInjection.signedInClient(stack, experience: .ticketmaster, label: "crash")
            let items = try await probe.get("/v1/catalog/ticketmaster/items?q=Chicago&limit=10")
                .decode(CatalogPage.self).items.map(\.id)
            try #require(items.count >= 3)
            var togglers: [FavoriteToggler] = []
            for user in 0..<Self.users {
                let (client, id) = try await FaultInjection.signedInClient(stack, experience: .ticketmaster,
                                                                           label: "crash-\(user)")
                togglers.append(FavoriteToggler(client: client, user: id, experience: .ticketmaster,
                                                items: Array(items.shuffled().prefix(3)), label: "crash-\(user)-\(id)"))
            }
            let replicas = try await stack.replicas()
            var pidsBefore: [String: pid_t] = [:]
            for replica in replicas { pidsBefore[replica] = try await stack.pid(of: replica) }

            let tally = Tally()
            let outageAnswers = Counter()
            // During the outage the only acceptable answer is the services' 503 problem (database unavailable or
            // not ready); a 500, an HTML page or a gateway error would be a bug.
            let expected: @Sendable (StackResponse?) -> Bool = { response in
                guard let response, response.status == .serviceUnavailable, response.isProblem else { return false }
                outageAnswers.increment()
                return true
            }
            let load = LoadSwitch()
            var readyAfter = Duration.zero
            let finished = try await withThrowingTaskGroup(of: FavoriteToggler.self) { group in
                for toggler in togglers {
                    group.addTask {
                        var toggler = toggler
                        while load.isOn {
                            try await toggler.next(tally: tally, giveUpAt: .now + .seconds(60),
                                                   failureIsExpected: expected)
                        }
                        return toggler
                    }
                }
                try await Task.sleep(for: .seconds(FaultInjection.loadSeconds) / 2)
                try await stack.crashDatabase()
                try await Task.sleep(for: Self.outage)
                let restart = ContinuousClock.now
                try await stack.stack("up")  // starts PostgreSQL; the services are still running and must recover
                readyAfter = ContinuousClock.now - restart
                try await Task.sleep(for: .seconds(FaultInjection.loadSeconds) / 2)
                load.turnOff()
                return try await group.reduce(into: []) { $0.append($1) }
            }

            var pidsAfter: [String: pid_t] = [:]
            for replica in replicas { pidsAfter[replica] = try await stack.pid(of: replica) }
            #expect(pidsAfter == pidsBefore, "a service replica had to be restarted after the database crash")

            let differences = try await FavoriteToggler.differencesInStore(of: finished, in: stack)
            let (attempts, failures) = tally.snapshot()
            let acknowledged = finished.map(\.acknowledged.count).reduce(0, +)
            let retried = finished.map(\.retriedCommands).reduce(0, +)
            FaultInjection.report("database crash", """
                \(Self.users) users, \(acknowledged) commands acknowledged in \(attempts) attempts; \
                \(outageAnswers.value) answered 503 during the outage; \(retried) commands retried with \
                their key; the services ready again \(readyAfter.inSeconds) after `scripts/stack up` began \
                starting PostgreSQL (its start included), no replica restarted; \
                \(differences.isEmpty ? "log and view match every acknowledged command" : "\(differences.count) users differ")
                """)
            #expect(acknowledged > Self.users * 2, "too little load to mean anything")
            #expect(outageAnswers.value > 0, "no request met the outage: the crash did not happen under load")
            #expect(failures.isEmpty, "unexpected answers: \(failures.prefix(5))")
            #expect(differences.isEmpty, "\(differences.prefix(5))")
        }
    }
}
