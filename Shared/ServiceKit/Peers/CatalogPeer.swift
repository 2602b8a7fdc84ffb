import AsyncHTTPClient
import Contracts
import Foundation
import HTTPTypes
import Logging

/// catalog-proxy asked as the user who is writing (their bearer token, the request's id and, when traces are exported,
/// its trace): favorites-service looks up the item being favorited, auth-service the categories a `defaultCategory`
/// must be one of. One mapping of its answers for both: the user's own refusals (401, 429) pass through, a 404 or 400
/// is the caller's to word, anything else is 503 `catalog-unavailable` and the caller saves nothing.
public struct CatalogPeer: Sendable {
    let peer: PeerRequest

    public init(baseURL: String, httpClient: HTTPClient) {
        peer = PeerRequest(baseURL: baseURL, httpClient: httpClient)
    }

    /// The item as its list cell shows it (`view=cell`): what a favorite keeps.
    public func item(_ id: String, in experience: ExperienceID, bearer: String, requestID: String, logger: Logger)
        async throws -> CatalogItem
    {
        // Every byte of the id outside the unreserved set is encoded: it can never add a path segment or a query.
        let path = "/v1/catalog/\(experience.rawValue.percentEncodedComponent)/items/\(id.percentEncodedComponent)"
            + "?view=cell"
        let answer = try await get(path, confirming: "item", answered: [200, 404, 400], bearer: bearer,
                                   requestID: requestID, logger: logger)
        switch answer.status {
        case 200:
            return try decode(CatalogItem.self, answer, confirming: "item")
        case 404:
            throw ServiceProblem(.notFound, .notFound, "The catalog has no item \(id) in \(experience).")
        default:
            // 400: the id is not one of this catalog's; the catalog's own words for why.
            let message = answer.problem?.errors?.first?.message ?? "is not an id of this catalog"
            throw ServiceProblem.validation([FieldError(field: "itemId", message: message)])
        }
    }

    /// The experience's categories; nil when it has none (the catalog answers 404).
    public func categories(of experience: ExperienceID, bearer: String, requestID: String, logger: Logger)
        async throws -> [CatalogCategory]?
    {
        let path = "/v1/catalog/\(experience.rawValue.percentEncodedComponent)/categories"
        let answer = try await get(path, confirming: "category", answered: [200, 404], bearer: bearer,
                                   requestID: requestID, logger: logger)
        guard answer.status == 200 else { return nil }
        return try decode(CategoryList.self, answer, confirming: "category").categories
    }

    /// The answer when its status is one the caller words itself; every other outcome thrown as the user's own
    /// refusal or as ``unavailable(confirming:)``.
    private func get(_ path: String, confirming what: String, answered: Set<UInt>, bearer: String, requestID: String,
                     logger: Logger) async throws -> PeerAnswer
    {
        guard let answer = await peer.get(path, bearer: bearer, requestID: requestID, logger: logger) else {
            throw Self.unavailable(confirming: what)
        }
        if let refusal = answer.usersOwnRefusal { throw refusal }
        guard answered.contains(answer.status) else {
            logger.warning("catalog-proxy refused the \(what)", metadata: ["status": "\(answer.status)"])
            throw answer.unavailable(Self.unavailable(confirming: what))
        }
        return answer
    }

    private func decode<Value: Decodable>(_ type: Value.Type, _ answer: PeerAnswer, confirming what: String) throws
        -> Value
    {
        guard let value = try? ServiceJSON.decoder.decode(type, from: answer.body) else {
            throw Self.unavailable(confirming: what)
        }
        return value
    }

    /// The catalog could not say: nothing is saved, and the client retries shortly.
    public static func unavailable(confirming what: String) -> ServiceProblem {
        ServiceProblem(.serviceUnavailable, .catalogUnavailable,
                       "The catalog cannot confirm the \(what) right now, so nothing was saved; retry shortly.",
                       headers: [.retryAfter: "2"])
    }
}
