import Contracts
import Foundation
import HTTPTypes
import Logging
import ServiceKit

/// Asks catalog-proxy for the item being favorited, as the user (their bearer token), with the request's id and in its
/// trace (`traceparent`).
struct CatalogLookup: Sendable {
    let peer: PeerRequest

    func item(experience: ExperienceID, id: String, bearer: String, requestID: String, traceparent: String,
              logger: Logger) async throws -> CatalogItem
    {
        // Every byte of the id outside the unreserved set is encoded: it can never add a path segment or a query. The
        // item as its list cell shows it (`view=cell`) is what the favorite keeps.
        let path = "/v1/catalog/\(experience.rawValue.percentEncodedComponent)/items/\(id.percentEncodedComponent)"
            + "?view=cell"
        guard let (status, body) = await peer.get(path, bearer: bearer, requestID: requestID, traceparent: traceparent,
                                                  logger: logger)
        else { throw Self.unavailable }
        switch status {
        case 200:
            guard let item = try? ServiceJSON.decoder.decode(CatalogItem.self, from: body) else {
                throw Self.unavailable
            }
            return item
        case 404:
            throw ServiceProblem(.notFound, .notFound, "The catalog has no item \(id) in \(experience).")
        case 400:
            throw ServiceProblem.validation([FieldError(field: "itemId", message: "is not an id of this catalog")])
        case 429:
            // This user's budget at the catalog is spent: theirs to wait for, not the catalog's failure.
            throw ServiceProblem(.tooManyRequests, .rateLimited,
                                 "Too many catalog lookups for this user; retry after the time given.",
                                 headers: [.retryAfter: "1"])
        case 401:
            // The token passed here but not there: it expired in between, or its session ended and catalog-proxy
            // heard of it first (each service polls the revocations on its own). The caller's token is what failed,
            // not the catalog.
            let problem = try? ServiceJSON.decoder.decode(ProblemDetails.self, from: body)
            throw AuthenticationMiddleware.refusal(problem?.type == .tokenExpired ? .expired : .revoked)
        default:
            logger.warning("catalog-proxy refused the lookup", metadata: ["status": "\(status)"])
            throw Self.unavailable
        }
    }

    static let unavailable = ServiceProblem(
        .serviceUnavailable, .catalogUnavailable,
        "The catalog cannot confirm the item right now, so nothing was saved; retry shortly.",
        headers: [.retryAfter: "2"]
    )
}
