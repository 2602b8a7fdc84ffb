import Foundation

/// What the scheduled refresh of the best sellers (``BestsellersRefresh``) fetches next, decided from how old each
/// answer in the shared store is: the list names once half their life is gone, the overview once per refresh window,
/// then each named list the overview does not carry (lists no longer published) once half its life is gone, missing
/// ones first, then the oldest. One call at a time: the refresh spends the NYT's budget a call at a time, within its
/// share of each minute (``callsPerMinute(ofUpstreamLimit:)``), and leaves the rest to users.
struct BestsellersRefreshPlan: Sendable, Equatable {
    /// How often the overview, every list of the current date, is fetched again.
    var overviewEvery: TimeInterval
    var namesEvery = BestsellersSource.namesLife / 2
    var listsEvery = BestsellersSource.listLife / 2

    enum Due: Sendable, Equatable {
        case names
        case overview
        case list(String)

        var request: UpstreamRequest {
            switch self {
            case .names: BestsellersSource.namesRequest
            case .overview: BestsellersSource.overviewRequest
            case .list(let id): BestsellersSource.listRequest(id)
            }
        }
    }

    /// The fetch due now, if any. Ages are seconds since the shared answer was fetched; nil when none is kept.
    /// `otherLists`: the named lists the overview does not carry, each with its answer's age.
    func next(namesAge: TimeInterval?, overviewAge: TimeInterval?,
              otherLists: [(id: String, age: TimeInterval?)]) -> Due? {
        if (namesAge ?? .infinity) >= namesEvery { return .names }
        if (overviewAge ?? .infinity) >= overviewEvery { return .overview }
        let due = otherLists.filter { ($0.age ?? .infinity) >= listsEvery }
        return due.max { ($0.age ?? .infinity) < ($1.age ?? .infinity) }.map { .list($0.id) }
    }

    /// The refresh's share of the upstream's calls in any minute: two of the NYT's five, and never all of them.
    static func callsPerMinute(ofUpstreamLimit limit: Int) -> Int {
        max(1, min(limit - 1, limit * 2 / 5))
    }
}
