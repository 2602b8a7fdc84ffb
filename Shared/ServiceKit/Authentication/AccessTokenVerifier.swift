import Contracts
import Foundation
import JWTKit
import Locking

/// Public keys to check signatures with, looked up by `kid`.
public protocol VerificationKeys: Sendable {
    /// A key collection holding `kid`, or nil when no such key is known (after a refresh, where that applies).
    func keys(containing kid: String) async throws -> JWTKeyCollection?
}

/// Sessions that ended before their access tokens expired.
public protocol SessionRevocations: Sendable {
    func isRevoked(_ user: AuthenticatedUser) async throws -> Bool
}

/// Checks an access token the same way in every service: EdDSA only, a known `kid`, a valid signature, the
/// ``AccessTokenPolicy`` claims, and a session that has not ended.
public struct AccessTokenVerifier: Sendable {
    let keys: any VerificationKeys
    let revocations: any SessionRevocations
    let policy: AccessTokenPolicy
    let verified = VerifiedTokens(capacity: 10_000)

    public init(keys: any VerificationKeys, revocations: any SessionRevocations, policy: AccessTokenPolicy = .standard) {
        self.keys = keys
        self.revocations = revocations
        self.policy = policy
    }

    public func verify(_ token: String, now: Date = Date()) async throws -> AuthenticatedUser {
        // A token whose signature and claims already checked out is the same token: only its expiry and its session
        // can have changed since. This keeps signature checks (and jwt-kit's key actor) off the path of a client's
        // every request.
        if let user = verified.user(for: token, now: now, leeway: policy.leeway) {
            if try await revocations.isRevoked(user) { throw TokenRejection.revoked }
            return user
        }
        return try await verifyFully(token, now: now)
    }

    private func verifyFully(_ token: String, now: Date) async throws -> AuthenticatedUser {
        // The header is read before jwt-kit sees the token: jwt-kit would fall back to a default key for a missing or
        // unknown `kid`, and we accept exactly one algorithm.
        let header = try TokenHeader(token: token)
        guard header.alg == "EdDSA" else { throw TokenRejection.unsupportedAlgorithm }
        guard let kid = header.kid, let collection = try await keys.keys(containing: kid) else {
            throw TokenRejection.unknownKey
        }
        let claims: AccessTokenClaims
        do {
            claims = try await collection.verify(token, as: AccessTokenClaims.self)
        } catch {
            throw TokenRejection.badSignature
        }
        let user = try policy.validate(claims, now: now)
        if try await revocations.isRevoked(user) { throw TokenRejection.revoked }
        verified.remember(token, user: user, expiresAt: claims.expiration.value)
        return user
    }
}

/// Tokens that passed every check but the revocation one, until they expire. Bounded: when full it starts over,
/// which costs only re-verification.
final class VerifiedTokens: Sendable {
    private let entries = Locked<[String: (user: AuthenticatedUser, expiresAt: Date)]>([:])
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    func user(for token: String, now: Date, leeway: TimeInterval) -> AuthenticatedUser? {
        entries.withLock { entries in
            guard let entry = entries[token] else { return nil }
            guard now.timeIntervalSince(entry.expiresAt) < leeway else {
                entries[token] = nil
                return nil
            }
            return entry.user
        }
    }

    func remember(_ token: String, user: AuthenticatedUser, expiresAt: Date) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = (user, expiresAt)
        }
    }
}

/// The protected header of a compact JWS, decoded without trusting it.
struct TokenHeader: Decodable {
    var alg: String?
    var kid: String?

    init(token: String) throws(TokenRejection) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[0])),
              let header = try? JSONDecoder().decode(TokenHeader.self, from: data)
        else { throw .malformed }
        self = header
    }
}
