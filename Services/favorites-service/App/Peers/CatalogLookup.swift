import Contracts
import Foundation
import HTTPTypes
import Logging
import ServiceKit

/// Asks catalog-proxy for the item being favorited, as the user (their bearer token), with the request's id (and, when
/// traces are exported, in the request's trace: AsyncHTTPClient sends `traceparent`).
struct CatalogLookup: Sendable {
    let peer: PeerRequest

    func item(experience: ExperienceID, id: String, bearer: String, requestID: String, logger: Logger)
        async throws -> CatalogItem
    {
        // Every byte of the id outside the unreserved set is encoded: it can never add a path segment or a query. The
        // item as its list cell shows it (`view=cell`) is what the favorite keeps.
        let path = "/v1/catalog/\(experience.rawValue.percentEncodedComponent)/items/\(id.percentEncodedComponent)"
            + "?view=cell"
        guard let answer = await peer.get(path, bearer: bearer, requestID: requestID, logger: logger)
        else { throw Self.unavailable }
        if let refusal = answer.usersOwnRefusal { throw refusal }
        switch answer.status {
        case 200:
            guard let item = try? ServiceJSON.decoder.decode(CatalogItem.self, from: answer.body) else {
                throw Self.unavailable
            }
            return item
        case 404:
            throw ServiceProblem(.notFound, .notFound, "The catalog has no item \(id) in \(experience).")
        case 400:
            // The id is not one of this catalog's: the catalog's own words for why.
            let message = answer.problem?.errors?.first?.message ?? "is not an id of this catalog"
            throw ServiceProblem.validation([FieldError(field: "itemId", message: message)])
        default:
            logger.warning("catalog-proxy refused the lookup", metadata: ["status": "\(answer.status)"])
            throw answer.unavailable(Self.unavailable)
        }
    }

    static let unavailable = ServiceProblem(
        .serviceUnavailable, .catalogUnavailable,
        "The catalog cannot confirm the item right now, so nothing was saved; retry shortly.",
        headers: [.retryAfter: "2"]
    )
}
