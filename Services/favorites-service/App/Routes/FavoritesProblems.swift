import Contracts
import HTTPTypes
import ServiceKit

/// favorites-service's refusals as clients get them: its one place that maps errors to problems.
extension FavoritesRefusal: ProblemConvertible {
    var problem: ServiceProblem {
        switch self {
        case .limitReached(let count, let experience):
            ServiceProblem(.conflict, .favoritesLimitReached, """
                You already keep \(count) favorites in \(experience), as many as one may; unfavorite some first.
                """)
        case .titleTaken(let title):
            ServiceProblem(.conflict, .cardTitleTaken,
                           "You already keep a card titled \"\(title.prefix(200))\"; a title is kept once.")
        case .spelledOtherwise(let spelling):
            ServiceProblem.validation([FieldError(
                field: "itemId", message: "is spelled \"\(spelling)\" in the catalog; use that spelling")])
        case .noWrittenItems(let experience):
            ServiceProblem(.notFound, .notFound, "Users write no items of their own in \(experience).")
        case .positionAhead(let current, let asked):
            ServiceProblem(.conflict, .syncPositionAhead, """
                This account's changes end at version \(current); \(asked) is past them (a position kept from another \
                account, or from before a restore). Sync again from 0.
                """)
        case .tooManyStreams(let allowed):
            ServiceProblem(.tooManyRequests, .tooManyStreams, """
                You have \(allowed) change streams open, as many as one may; close one (a stream frees its place as soon \
                as its connection closes).
                """, headers: [.retryAfter: "5"])
        case .streamsFull:
            ServiceProblem(.serviceUnavailable, .serviceUnreachable,
                           "This replica holds as many change streams as it may; reconnect in a moment.",
                           headers: [.retryAfter: "2"])
        }
    }
}
