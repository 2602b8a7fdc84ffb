import Contracts
import Foundation
import Locking
import Logging
import ServiceLifecycle

/// Keeps the best sellers in the shared store before anyone asks, so that a user's pick of a list reads PostgreSQL and
/// never spends the NYT's budget nor waits for it: the list names, the overview of every list of the current date
/// once per refresh window, and the named lists the overview does not carry, on the schedule
/// ``BestsellersRefreshPlan`` sets.
///
/// Every replica runs it; only the holder of the `bestsellers` lease (``RefreshLease``) fetches, so the replicas make
/// one schedule between them. The holder looks every ``tick`` and makes at most one call then, and no more than its
/// share of the NYT's minute (``BestsellersRefreshPlan/callsPerMinute(ofUpstreamLimit:)``). Its calls are the
/// service's own: they count against the NYT's windows for all replicas, and against no user's share.
struct BestsellersRefresh: Service {
    let runner: StepRunner
    let shared: SharedAnswers
    let lease: RefreshLease
    let plan: BestsellersRefreshPlan
    /// Calls the refresh may make in any 60 seconds.
    let callsPerMinute: Int
    let logger: Logger
    /// How often it looks; the lease lasts a few looks, so a holder that stops is replaced within seconds.
    static let tick = Duration.seconds(5)
    static let leaseDuration: TimeInterval = 30

    /// What the holder remembers between looks: its recent calls, and the lists of the names and of the overview it
    /// last read (read again from the shared store when another replica fetched them).
    private struct Memory {
        var calls: [ContinuousClock.Instant] = []
        var named: [String]?
        var inOverview: Set<String>?
    }

    private let memory = Locked(Memory())

    init(runner: StepRunner, shared: SharedAnswers, lease: RefreshLease, plan: BestsellersRefreshPlan,
         callsPerMinute: Int, logger: Logger) {
        self.runner = runner
        self.shared = shared
        self.lease = lease
        self.plan = plan
        self.callsPerMinute = callsPerMinute
        self.logger = logger
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.look()
                try? await Task.sleep(for: Self.tick)
            }
        }
        await lease.release(logger: logger)
    }

    /// One look: as the lease's holder, the call that is due, if the minute's share allows one.
    func look() async {
        do {
            guard try await lease.hold(for: Self.leaseDuration), hasCallLeft() else { return }
            guard let due = try await nextDue() else { return }
            memory.withLock { $0.calls.append(.now) }
            let answer = try await runner.refresh(
                due.request, for: .service(requestID: "bestsellers-refresh-\(UUID())", logger: logger))
            try remember(due, answer)
            logger.info("best sellers refreshed", metadata: ["path": "\(due.request.path)"])
        } catch {
            logger.warning("could not refresh the best sellers; trying again later", metadata: ["error": "\(error)"])
        }
    }

    private func hasCallLeft() -> Bool {
        memory.withLock { memory in
            let minuteAgo = ContinuousClock.now - .seconds(60)
            memory.calls.removeAll { $0 < minuteAgo }
            return memory.calls.count < callsPerMinute
        }
    }

    /// What the plan says is due, from the ages of the shared answers.
    private func nextDue() async throws -> BestsellersRefreshPlan.Due? {
        let names = try key(BestsellersRefreshPlan.Due.names), overview = try key(.overview)
        var ages = try await shared.ages(of: [names, overview])
        if memory.withLock({ $0.named == nil }), ages[names] != nil { try await reread(.names, key: names) }
        if memory.withLock({ $0.inOverview == nil }), ages[overview] != nil {
            try await reread(.overview, key: overview)
        }
        let (named, inOverview) = memory.withLock { ($0.named ?? [], $0.inOverview) }
        // Until an overview says which lists it carries, no list is fetched on its own.
        let others = inOverview.map { carried in named.filter { !carried.contains($0) } } ?? []
        let listKeys = try others.map { try key(.list($0)) }
        ages.merge(try await shared.ages(of: listKeys)) { first, _ in first }
        return plan.next(namesAge: ages[names], overviewAge: ages[overview],
                         otherLists: zip(others, listKeys).map { ($0, ages[$1]) })
    }

    /// Reads an answer another replica (or an earlier holder) kept.
    private func reread(_ due: BestsellersRefreshPlan.Due, key: String) async throws {
        guard let answer = try await shared.answer(for: key) else { return }
        try remember(due, answer)
    }

    private func remember(_ due: BestsellersRefreshPlan.Due, _ answer: UpstreamAnswer) throws {
        guard !answer.isNotFound else { return }
        switch due {
        case .names:
            let named = try NYTBooks.categories(answer.body).map(\.id)
            memory.withLock { $0.named = named }
        case .overview:
            let carried = try NYTBooks.listIDs(inOverview: answer.body)
            memory.withLock { $0.inOverview = carried }
        case .list:
            break
        }
    }

    private func key(_ due: BestsellersRefreshPlan.Due) throws -> String {
        guard let key = runner.key(for: due.request) else {
            throw UpstreamFailure.failed("the NYT Books upstream is not configured")
        }
        return key
    }
}
