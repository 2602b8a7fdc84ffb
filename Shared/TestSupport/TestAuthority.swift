import Contracts
import Foundation
import Hummingbird
import JWTKit
import Locking
import ServiceKit

/// Stands in for auth-service in tests of the other services: publishes a key set and an (empty) revocation list on
/// any router, and signs access tokens those services accept.
public struct TestAuthority: Sendable {
    public let signingKey: EdDSA.PrivateKey
    public let kid = "test-key"
    /// What `/v1/auth/deleted-accounts` lists; tests add to it.
    public let deletedAccounts = DeletionList()

    public final class DeletionList: Sendable {
        private let entries = Locked<[DeletedAccounts.Entry]>([])
        public func add(_ user: UUID, at date: Date = Date()) {
            // As auth-service lists them: to the second.
            let second = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
            entries.withLock { $0.append(.init(userId: user, deletedAt: second)) }
        }

        /// The page auth-service would list: after (`since`, `after`) in the order of (time, user id), at most
        /// ``DeletedAccounts/pageSize``. User ids compare as PostgreSQL compares them, byte by byte (as their hex).
        func page(since: Date, after: UUID?) -> [DeletedAccounts.Entry] {
            func key(_ date: Date, _ user: UUID?) -> (TimeInterval, String) {
                (date.timeIntervalSince1970.rounded(.down), user?.uuidString.lowercased() ?? "")
            }
            let start = key(since, after)
            return entries.withLock { $0 }
                .filter { key($0.deletedAt, $0.userId) > start }
                .sorted { key($0.deletedAt, $0.userId) < key($1.deletedAt, $1.userId) }
                .prefix(DeletedAccounts.pageSize).map { $0 }
        }
    }

    /// What `/v1/auth/profile-changes` lists; tests add to it.
    public let profileChanges = ProfileChangeList()

    public final class ProfileChangeList: Sendable {
        private let entries = Locked<[ProfileChange]>([])
        /// Records a change of `user`'s profile now (to the second, as auth-service lists it), one version past the
        /// user's last; returns it.
        @discardableResult
        public func change(_ user: UUID, experience: ExperienceID, preferences: [String: String] = [:],
                           displayName: String? = nil) -> ProfileChange {
            let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            return entries.withLock { entries in
                let version = (entries.filter { $0.userId == user }.map(\.version).max() ?? 0) + 1
                let change = ProfileChange(userId: user, version: version, changedAt: now, experience: experience,
                                           preferences: preferences, displayName: displayName)
                entries.append(change)
                return change
            }
        }

        func since(_ date: Date) -> ProfileChanges {
            ProfileChanges(changes: entries.withLock { $0 }.filter { $0.changedAt >= date }, asOf: Date())
        }
    }

    public init() {
        signingKey = try! EdDSA.PrivateKey()  // generating a key cannot fail for Ed25519
    }

    /// `/.well-known/jwks.json`, `/v1/auth/revocations`, `/v1/auth/deleted-accounts`, `/v1/auth/profile-changes` and
    /// `/v1/auth/health/live`.
    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        let jwks = (try? JSONEncoder().encode(JWKS(keys: [JWK.octetKeyPair(
            .eddsa, identifier: JWKIdentifier(string: kid),
            x: signingKey.publicKey.rawRepresentation.base64URLEncodedString(), y: nil, curve: .ed25519)]))) ?? Data()
        router.get("/.well-known/jwks.json") { _, _ in jwks.jsonResponse() }
        router.get("/v1/auth/revocations") { _, _ in Data(#"{"sessionIds":[],"windowSeconds":965}"#.utf8).jsonResponse() }
        router.get("/v1/auth/health/live") { _, _ in "ok" }
        let deleted = deletedAccounts
        router.get("/v1/auth/deleted-accounts") { request, _ in
            let query = request.uri.queryParameters
            let since = query["since"].flatMap { try? Date(String($0), strategy: .iso8601) } ?? Date(timeIntervalSince1970: 0)
            let after = query["after"].flatMap { UUID(uuidString: String($0)) }
            return try ServiceJSON.encoder.encode(DeletedAccounts(accounts: deleted.page(since: since, after: after)))
                .jsonResponse()
        }
        let profiles = profileChanges
        router.get("/v1/auth/profile-changes") { request, _ in
            let since = request.uri.queryParameters["since"].flatMap { try? Date(String($0), strategy: .iso8601) }
            return try ServiceJSON.encoder.encode(profiles.since(since ?? Date().addingTimeInterval(-60))).jsonResponse()
        }
    }

    /// An access token for `user`, valid for `lifetime` seconds (ten minutes unless told), saying whether the user's
    /// email is verified when `emailVerified` is given.
    public func token(user: UUID = UUID(), lifetime: TimeInterval = 600, emailVerified: Bool? = nil) async throws
        -> String
    {
        let keys = JWTKeyCollection()
        await keys.add(eddsa: signingKey, kid: JWKIdentifier(string: kid))
        return try await keys.sign(AccessTokenClaims(
            user: AuthenticatedUser(userID: user, sessionID: UUID(), emailVerified: emailVerified), issuedAt: Date(),
            lifetime: lifetime,
            policy: .standard
        ), kid: JWKIdentifier(string: kid))
    }
}
