import Contracts
import Foundation
import Locking
import NIOHTTP1
import Postgres
import Testing

/// The faults suite: each scenario drives real load through the gateway of the running stack, injects a fault
/// (a database crash, killed and restarted replicas, a failing upstream, a transaction held open, hostile input),
/// and then checks the data, not only the status codes. They run one at a time, after the journeys, because each
/// one breaks the stack the others use (`scripts/test` runs them as a stage of their own; `scripts/test --faults`
/// runs only them). Each prints `fault-report:` lines with its figures, which the run collects.
@Suite(.serialized, .enabled(if: StackUnderTest.current != nil, "needs the running stack: run scripts/test"))
enum FaultInjection {
    /// How long each scenario keeps its load running: `FAULT_LOAD_SECONDS` (the CI run uses the default; `scripts/test
    /// --faults` runs 20 s).
    static let loadSeconds: Int = {
        Int(ProcessInfo.processInfo.environment["FAULT_LOAD_SECONDS"] ?? "").map { max(3, $0) } ?? 6
    }()

    static func report(_ scenario: String, _ figures: String) {
        print("fault-report: \(scenario): \(figures)")
    }

    /// A new account through the gateway, and a client signed in as it.
    static func signedInClient(_ stack: StackUnderTest, experience: ExperienceID, label: String) async throws
        -> (client: StackClient, user: UUID)
    {
        let anonymous = StackClient(stack.gateway)
        let response = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
            email: uniqueEmail(label), password: accountPassword, experience: experience.rawValue))
        let session = try response.decode(AuthSession.self)
        return (anonymous.with(token: session.accessToken), session.user.id)
    }
}

/// Requests made and the failed ones, from several tasks.
final class Tally: Sendable {
    private let state = Locked((total: 0, failures: [String]()))

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

/// Tells load tasks when to stop.
final class LoadSwitch: Sendable {
    private let stopped = Locked(false)
    var isOn: Bool { !stopped.withLock { $0 } }
    func turnOff() { stopped.withLock { $0 = true } }
}

/// A count several tasks add to.
final class Counter: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

/// One user favoriting and unfavoriting a few items in turn, each command with its own `Idempotency-Key`, retried
/// with that same key until it is acknowledged: what an app on a flaky network does. Every command changes the
/// state (add, then remove, then add…), so each acknowledged one must be exactly one event in the user's stream,
/// in order, and nothing else may be there.
struct FavoriteToggler: Sendable {
    struct Command: Sendable, Equatable {
        var eventType: String
        var itemId: String
    }

    let client: StackClient
    let user: UUID
    let experience: ExperienceID
    let items: [String]
    let label: String
    private(set) var acknowledged: [Command] = []
    private(set) var favorited: Set<String> = []
    /// Commands that needed more than one attempt.
    private(set) var retriedCommands = 0

    init(client: StackClient, user: UUID, experience: ExperienceID, items: [String], label: String) {
        self.client = client
        self.user = user
        self.experience = experience
        self.items = items
        self.label = label
    }

    /// Sends the next command until it is acknowledged or `giveUpAt` passes. Every failed attempt is recorded in
    /// `tally`, with `failureIsExpected` telling whether it may be (a database outage) or not.
    mutating func next(tally: Tally, giveUpAt: ContinuousClock.Instant,
                       failureIsExpected: @Sendable (StackResponse?) -> Bool = { _ in false }) async throws {
        let item = items[acknowledged.count % items.count]
        let adding = !favorited.contains(item)
        let key = "\(label)-\(acknowledged.count)"
        let path = "/v1/favorites/\(experience.rawValue)/\(item)"
        let name = adding ? "PUT favorite" : "DELETE favorite"
        var attempt = 0
        while true {
            attempt += 1
            if attempt == 2 { retriedCommands += 1 }
            var response: StackResponse?
            var reason: String
            do {
                let answer = try await client.send(adding ? .PUT : .DELETE, path, headers: [("Idempotency-Key", key)])
                response = answer
                // A retry of an add that was applied gets the original 201 back, never a 200 ("already there").
                if answer.status == (adding ? .created : .noContent) {
                    tally.record(name, failed: nil)
                    break
                }
                reason = "HTTP \(answer.status.code) \(String(decoding: answer.body.prefix(300), as: UTF8.self))"
            } catch {
                reason = "\(error)"
            }
            tally.record(name, failed: failureIsExpected(response) ? nil : reason)
            guard ContinuousClock.now < giveUpAt else {
                throw StackError("\(name) \(path) (key \(key)) never acknowledged; last: \(reason)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        acknowledged.append(Command(eventType: adding ? "favorite-added" : "favorite-removed", itemId: item))
        if adding { favorited.insert(item) } else { favorited.remove(item) }
    }

    /// What differs from what each user was told, one line per user that differs.
    static func differencesInStore(of togglers: [FavoriteToggler], in stack: StackUnderTest) async throws -> [String] {
        try await stack.withFavoritesDatabase { pool in
            var found: [String] = []
            for toggler in togglers {
                if let difference = try await toggler.differencesInStore(pool) { found.append(difference) }
            }
            return found
        }
    }

    /// What the user's stream and view hold must be exactly what the user was told: `nil` when they are, or what
    /// differs.
    func differencesInStore(_ pool: DatabasePool) async throws -> String? {
        let stream = "user-" + user.uuidString.lowercased()
        let events = try await pool.query("""
            SELECT event_type, data->>'itemId' AS item_id FROM favorites.events
             WHERE stream_id = \(stream) ORDER BY version
            """).rows.map { Command(eventType: try $0.decode(String.self, column: "event_type"),
                                    itemId: try $0.decode(String.self, column: "item_id")) }
        let view = try await pool.query("""
            SELECT item_id FROM favorites.favorites WHERE user_id = \(user) AND experience = \(experience.rawValue)
            """).values(String.self)
        var differences: [String] = []
        if events != acknowledged {
            let firstDifference = zip(events, acknowledged).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(events.count, acknowledged.count)
            differences.append("\(label): \(acknowledged.count) acknowledged commands but \(events.count) events, "
                               + "first difference at \(firstDifference)")
        }
        if Set(view) != favorited || view.count != favorited.count {
            differences.append("\(label): the view holds \(view.sorted()), the client was told \(favorited.sorted())")
        }
        return differences.isEmpty ? nil : differences.joined(separator: "; ")
    }
}

extension Duration {
    /// "2.4 s", for the reports.
    var inSeconds: String {
        let (seconds, attoseconds) = components
        return String(format: "%.1f s", Double(seconds) + Double(attoseconds) / 1e18)
    }
}

extension StackResponse {
    /// An error as the contract promises it: a problem document with a type, a detail and the request id.
    var isProblem: Bool {
        guard headers.first(name: "Content-Type")?.hasPrefix(ProblemDetails.mediaType) == true, let problem else {
            return false
        }
        return !problem.type.rawValue.isEmpty && !problem.detail.isEmpty && !problem.requestId.isEmpty
    }
}
