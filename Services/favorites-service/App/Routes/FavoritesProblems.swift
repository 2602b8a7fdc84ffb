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
        }
    }
}
