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
        guard let answer = await peer.get(path, bearer: bearer, requestID: requestID, logger: logger) else {
            throw Self.unavailable
        }
        if let refusal = answer.usersOwnRefusal { throw refusal }
        switch answer.status {
        case 200:
            guard let list = try? ServiceJSON.decoder.decode(CategoryList.self, from: answer.body)
            else { throw Self.unavailable }
            return list.categories.contains { $0.id == id }
        case 404:
            return nil
        default:
            logger.warning("catalog-proxy refused the categories", metadata: ["status": "\(answer.status)"])
            throw answer.unavailable(Self.unavailable)
        }
    }

    static let unavailable = ServiceProblem(
        .serviceUnavailable, .catalogUnavailable,
        "The catalog cannot confirm the category right now, so nothing was saved; retry shortly.",
        headers: [.retryAfter: "2"]
    )
}
