import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// What other services need from auth-service on their own: the public keys and the recently ended sessions (to verify
/// tokens), the deleted accounts (to erase their data) and the changed profiles (to tell the users' devices).
struct KeysController: Sendable {
    let keys: SigningKeys
    let sessions: SessionStore
    let accounts: AccountStore
    let revocationWindow: TimeInterval
    let peerSecret: PeerSecret

    func register(on router: Router<AppRequestContext>, api: RouterGroup<AppRequestContext>) {
        router.get(".well-known/jwks.json", use: jwks)
        api.get("revocations", use: revocations)
        api.get("deleted-accounts", use: deletedAccounts)
        api.get("profile-changes", use: profileChanges)
    }

    /// The published keys (several around a rotation). Cacheable: a new key is published long before it signs.
    @Sendable func jwks(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try ServiceJSON.encoder.encode(await keys.publishedKeySet())
        return body.conditionalJSONResponse(
            to: request, headers: [.cacheControl: "public, max-age=\(AuthConfiguration.jwksMaximumAge)"])
    }

    /// Sessions ended within the access-token lifetime, for the services (with their ``PeerSecret``); they poll it (conditionally, so mostly 304s).
    @Sendable func revocations(_ request: Request, context: AppRequestContext) async throws -> Response {
        try requirePeer(request)
        let ids = try await sessions.revoked(since: Date().addingTimeInterval(-revocationWindow))
        let body = try ServiceJSON.encoder.encode(
            RevokedSessions(sessionIds: ids, windowSeconds: Int(revocationWindow)))
        return body.conditionalJSONResponse(to: request, headers: [.cacheControl: "no-cache"])
    }

    /// Accounts deleted from `since` on (ISO 8601; the beginning of time when absent), after the user id `after` in
    /// that second (a page's last entry; before every id when absent), for services that erase the user's data. Kept
    /// for 30 days.
    @Sendable func deletedAccounts(_ request: Request, context: AppRequestContext) async throws -> Response {
        try requirePeer(request)
        let query = request.uri.queryParameters
        var since = Date(timeIntervalSince1970: 0)
        var errors: [FieldError] = []
        if let text = query["since"] {
            if let parsed = try? Date(String(text), strategy: .iso8601) { since = parsed }
            else { errors.append(FieldError(field: "since", message: "must be an ISO 8601 time")) }
        }
        var after = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        if let text = query["after"] {
            if let parsed = UUID(uuidString: String(text)) { after = parsed }
            else { errors.append(FieldError(field: "after", message: "must be a user id")) }
        }
        guard errors.isEmpty else { throw ServiceProblem.validation(errors) }
        let deleted = try await accounts.deletions(since: since, after: after, limit: DeletedAccounts.pageSize)
        return try ServiceJSON.encoder.encode(DeletedAccounts(accounts: deleted))
            .jsonResponse(headers: [.cacheControl: "no-cache"])
    }

    /// Profiles changed from `since` on (ISO 8601; the last minute when absent), oldest first, a page at a time, with
    /// the time of the answer: favorites-service polls it to tell each user's devices on their change streams.
    @Sendable func profileChanges(_ request: Request, context: AppRequestContext) async throws -> Response {
        try requirePeer(request)
        var since = Date().addingTimeInterval(-60)
        if let text = request.uri.queryParameters["since"] {
            guard let parsed = try? Date(String(text), strategy: .iso8601) else {
                throw ServiceProblem.validation([FieldError(field: "since", message: "must be an ISO 8601 time")])
            }
            since = parsed
        }
        let changes = try await accounts.profileChanges(since: since, limit: ProfileChanges.pageSize)
        return try ServiceJSON.encoder.encode(changes).jsonResponse(headers: [.cacheControl: "no-cache"])
    }

    /// The feeds answer only the services (``PeerSecret``): whoever reaches this port is not necessarily one.
    private func requirePeer(_ request: Request) throws {
        guard peerSecret.isPresented(in: request) else {
            throw ServiceProblem(.unauthorized, .authenticationRequired,
                                 "This feed is for the services only; send the peers' \(PeerSecret.header.rawName).")
        }
    }
}
