import Foundation
import JWTKit

/// Who is calling: the `sub` and `sid` of a verified access token.
public struct AuthenticatedUser: Sendable, Equatable {
    public let userID: UUID
    public let sessionID: UUID
    /// When the access token that named this user expires (nil where no token did): what a long-lived response, such
    /// as a stream of changes, ends at.
    public let expiresAt: Date?
    /// Whether the token said the account's email is verified (nil where no token said).
    public let emailVerified: Bool?

    public init(userID: UUID, sessionID: UUID, expiresAt: Date? = nil, emailVerified: Bool? = nil) {
        self.userID = userID
        self.sessionID = sessionID
        self.expiresAt = expiresAt
        self.emailVerified = emailVerified
    }
}

/// The claims of an access token. auth-service signs them; every service verifies them with ``AccessTokenVerifier``.
public struct AccessTokenClaims: JWTPayload, Equatable {
    enum CodingKeys: String, CodingKey {
        case issuer = "iss", audience = "aud", subject = "sub", sessionID = "sid"
        case issuedAt = "iat", notBefore = "nbf", expiration = "exp", emailVerified = "email_verified"
    }

    public var issuer: IssuerClaim
    public var audience: AudienceClaim
    public var subject: SubjectClaim
    public var sessionID: String
    public var issuedAt: IssuedAtClaim
    public var notBefore: NotBeforeClaim
    public var expiration: ExpirationClaim
    /// OpenID Connect's claim: whether the owner of the account's email followed a link mailed to it.
    public var emailVerified: Bool?

    public init(user: AuthenticatedUser, issuedAt: Date, lifetime: TimeInterval, policy: AccessTokenPolicy) {
        issuer = IssuerClaim(value: policy.issuer)
        audience = AudienceClaim(value: policy.audience)
        subject = SubjectClaim(value: user.userID.uuidString.lowercased())
        sessionID = user.sessionID.uuidString.lowercased()
        // Whole seconds, as JWTs carry them: a re-signed token with the same claims is then byte-identical.
        let issued = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        self.issuedAt = IssuedAtClaim(value: issued)
        notBefore = NotBeforeClaim(value: issued)
        expiration = ExpirationClaim(value: issued.addingTimeInterval(lifetime))
        emailVerified = user.emailVerified
    }

    /// Signature checks happen in jwt-kit; the claims are checked by ``AccessTokenPolicy``, which knows what to expect.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// What every service expects of an access token.
public struct AccessTokenPolicy: Sendable {
    public var issuer: String
    public var audience: String
    /// Clock skew tolerated between the signing and the verifying host.
    public var leeway: TimeInterval
    /// Tokens claiming a longer life than this are refused even when correctly signed.
    public var maximumLifetime: TimeInterval

    public static let standard = AccessTokenPolicy(
        issuer: "favoriteme-auth", audience: "favoriteme", leeway: 5, maximumLifetime: 15 * 60
    )

    public init(issuer: String, audience: String, leeway: TimeInterval, maximumLifetime: TimeInterval) {
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.maximumLifetime = maximumLifetime
    }

    /// The caller, when the claims are what this policy expects at `now`.
    public func validate(_ claims: AccessTokenClaims, now: Date) throws(TokenRejection) -> AuthenticatedUser {
        guard claims.issuer.value == issuer else { throw .wrongIssuer }
        guard claims.audience.value.contains(audience) else { throw .wrongAudience }
        guard now.timeIntervalSince(claims.expiration.value) < leeway else { throw .expired }
        guard claims.notBefore.value.timeIntervalSince(now) <= leeway else { throw .notYetValid }
        let lifetime = claims.expiration.value.timeIntervalSince(claims.issuedAt.value)
        guard lifetime <= maximumLifetime else { throw .malformed }
        guard let userID = UUID(uuidString: claims.subject.value), let sessionID = UUID(uuidString: claims.sessionID)
        else { throw .malformed }
        return AuthenticatedUser(userID: userID, sessionID: sessionID, expiresAt: claims.expiration.value,
                                 emailVerified: claims.emailVerified)
    }
}

/// Why an access token was refused. `expired` answers 401 `token-expired`, all others 401 `invalid-token`; the reason
/// goes into the detail.
public enum TokenRejection: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed, unsupportedAlgorithm, unknownKey, badSignature, expired, notYetValid, wrongIssuer, wrongAudience
    case revoked

    public var description: String {
        switch self {
        case .malformed: "The access token is malformed."
        case .unsupportedAlgorithm: "The access token is not signed with EdDSA."
        case .unknownKey: "The access token is signed with an unknown key."
        case .badSignature: "The access token's signature does not verify."
        case .expired: "The access token has expired; refresh it."
        case .notYetValid: "The access token is not valid yet."
        case .wrongIssuer: "The access token was issued by someone else."
        case .wrongAudience: "The access token is meant for another audience."
        case .revoked: "The session of this access token has ended; sign in again."
        }
    }
}
