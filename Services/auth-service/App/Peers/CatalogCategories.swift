import Contracts
import Foundation
import HTTPTypes
import Logging
import ServiceKit

/// An experience's categories, asked of catalog-proxy as the user (their bearer token), so that a preference naming
/// one (`defaultCategory`) is checked against what the catalog lists now.
struct CatalogCategories: Sendable {
    let peer: PeerRequest

    /// Whether `id` is one of `experience`'s categories; nil when the experience has none. Throws when the catalog
    /// cannot be asked (nothing is saved then).
    func contains(_ id: String, in experience: ExperienceID, bearer: String, requestID: String, logger: Logger)
        async throws -> Bool?
    {
        let path = "/v1/catalog/\(experience.rawValue.percentEncodedComponent)/categories"
        guard let (status, body) = await peer.get(path, bearer: bearer, requestID: requestID, logger: logger) else {
            throw Self.unavailable
        }
        switch status {
        case 200:
            guard let list = try? ServiceJSON.decoder.decode(CategoryList.self, from: body)
            else { throw Self.unavailable }
            return list.categories.contains { $0.id == id }
        case 404:
            return nil
        case 429:
            // This user's catalog budget is spent: theirs to wait for, not the catalog's failure.
            throw ServiceProblem(.tooManyRequests, .rateLimited, "Too many catalog requests; retry after the time given.",
                                 headers: [.retryAfter: "60"])
        default:
            logger.warning("catalog-proxy refused the categories", metadata: ["status": "\(status)"])
            throw Self.unavailable
        }
    }

    static let unavailable = ServiceProblem(
        .serviceUnavailable, .catalogUnavailable,
        "The catalog cannot confirm the category right now, so nothing was saved; retry shortly.",
        headers: [.retryAfter: "2"]
    )
}
