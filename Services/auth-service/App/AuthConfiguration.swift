import Configuration
import Foundation
import ServiceKit

/// auth-service's own settings, next to the kit's ``ServiceConfiguration``. Every key is in the README's table.
///
/// - `BCRYPT_COST` (default 12): work factor of password hashes; each step doubles the time of a hash.
/// - `BCRYPT_HASH_QUEUE` (default 4), `BCRYPT_CHECK_QUEUE` (default 64): new hashes (sign-up, password change and
///   reset) and password checks (sign-in, re-confirmation) that may wait for a thread; past them, 503 `service-busy`
/// - `SIGNUPS_PER_CLIENT` (default 20): sign-ups per hour from one client address (an IPv6 /64)
/// - `ACCESS_TOKEN_TTL_SECONDS` (default 900, at most 900)
/// - `SESSION_IDLE_TTL_SECONDS` (default 30 days), `SESSION_ABSOLUTE_TTL_SECONDS` (default 90 days)
/// - `REFRESH_REUSE_GRACE_SECONDS` (default 30): a retried refresh within this time gets the same pair
/// - `REFRESH_RETRY_WINDOW_SECONDS` (default 30 days): a retried refresh with the first attempt's `Idempotency-Key`
///   gets the same refresh token within this time
/// - `SIGNING_KEY_ROTATION_SECONDS` (default 30 days), `SIGNING_KEY_PUBLISH_LEAD_SECONDS` (default 1 hour)
/// - `TRUSTED_PROXIES` (default `127.0.0.1/32,::1/128`): peers whose `X-Real-IP` names the client
/// - `CATALOG_URL` (default `http://127.0.0.1:8082`): catalog-proxy, asked to check a `defaultCategory` preference
///   (not needed for readiness: accounts and sign-in never wait on the catalog)
/// - the mail settings of ``MailConfiguration``
struct AuthConfiguration: Sendable {
    var bcryptCost: Int
    var hashingLines: PasswordHasher.Lines
    var signUpLimit: RequestLimit
    var accessTokenLifetime: TimeInterval
    var sessions: SessionPolicy
    var keySchedule: KeySchedule
    var trustedProxies: TrustedProxies
    var catalogURL: String
    var mail: MailConfiguration
    /// Every setting read here, as declared (see ``StrictSettings/declared``).
    let declaredSettings: [Setting]
    /// How long `/.well-known/jwks.json` may be cached; the publish lead must be well above it.
    static let jwksMaximumAge = 300

    init(reader: ConfigReader) throws {
        var settings = StrictSettings(reader: reader)
        bcryptCost = settings.int("bcrypt.cost", default: 12, in: 4...16,
            help: "Work factor of new password hashes; each step doubles the cost of a sign-in.")
        hashingLines = PasswordHasher.Lines(
            newHashes: settings.int("bcrypt.hashQueue", default: PasswordHasher.Lines.standard.newHashes, in: 0...10_000,
                help: """
                New hashes (sign-up, password change and reset; at most half the cores at once) that may wait for \
                a thread on a replica; past it 503 `service-busy` with `Retry-After: 1`, so sign-ups never stand \
                in front of sign-ins.
                """),
            checks: settings.int("bcrypt.checkQueue", default: PasswordHasher.Lines.standard.checks, in: 0...100_000,
                help: """
                Password checks (sign-in, re-confirmation; as many at once as the cores) that may wait for a \
                thread on a replica; past it 503 `service-busy` with `Retry-After: 1`.
                """))
        signUpLimit = .perHour(settings.int("signups.perClient", default: 20, in: 1...1_000_000,
            help: """
            Sign-ups per hour from one client address (an IPv6 /64), every attempt counted; past it 429 \
            `sign-up-throttled` with the seconds until the window ends.
            """))
        let accessTTL = settings.int("accessToken.ttlSeconds", default: 900, in: 30...900,
            help: "Access-token lifetime; every service refuses tokens claiming more than 15 minutes.")
        accessTokenLifetime = TimeInterval(accessTTL)
        sessions = SessionPolicy(
            idleLifetime: TimeInterval(settings.int("session.idleTtlSeconds", default: 30 * 86_400,
                                                    in: 60...(365 * 86_400),
                help: "A session not refreshed for this long ends.")),
            absoluteLifetime: TimeInterval(settings.int("session.absoluteTtlSeconds", default: 90 * 86_400,
                                                        in: 60...(730 * 86_400),
                help: "A session ends this long after sign-in.")),
            reuseGrace: TimeInterval(settings.int("refresh.reuseGraceSeconds", default: 30, in: 0...300,
                help: "A refresh retried with the token just exchanged gets the same pair again.")),
            retryWindow: TimeInterval(settings.int("refresh.retryWindowSeconds", default: 30 * 86_400,
                                                   in: 0...(365 * 86_400),
                help: """
                A refresh retried with the token just exchanged and the first attempt's `Idempotency-Key` (an app \
                whose answer was lost while suspended) gets the same refresh token again.
                """))
        )
        let rotation = settings.int("signingKey.rotationSeconds", default: 30 * 86_400, in: 60...(365 * 86_400),
            help: "How long one key signs before its successor takes over.")
        // At least the JWKS cache lifetime, so every verifier has the new key before it signs.
        let lead = settings.int("signingKey.publishLeadSeconds", default: 3600, in: Self.jwksMaximumAge...(30 * 86_400),
            help: "How long a new key is published before it signs; shorter than the rotation.")
        keySchedule = KeySchedule(
            rotationInterval: TimeInterval(rotation), publishLead: TimeInterval(lead),
            // Tokens signed by a retired key stay checkable until they expire, plus clock skew.
            verificationTail: TimeInterval(accessTTL) + AccessTokenPolicy.standard.leeway + 60
        )
        let proxies = settings.string("trustedProxies", default: "127.0.0.1/32,::1/128",
            help: """
            Addresses or networks whose `X-Real-IP` header names the client \
            ([below](#client-addresses-and-trusted_proxies)).
            """)
        switch TrustedProxies.parse(proxies) {
        case .success(let parsed): trustedProxies = parsed
        case .failure(let invalid):
            settings.reject("trustedProxies", "has \"\(invalid.entry)\", which is not an address or network")
            trustedProxies = TrustedProxies(networks: [])
        }
        catalogURL = settings.baseURL("catalog.url", default: "http://127.0.0.1:8082",
            help: """
            catalog-proxy's base URL: for favorites-service (each favorite's item), and for auth-service (checking \
            a `defaultCategory` preference; sign-in never waits on it).
            """)
        mail = MailConfiguration(settings: &settings)
        if lead >= rotation {
            settings.reject("signingKey.publishLeadSeconds", "must be shorter than SIGNING_KEY_ROTATION_SECONDS")
        }
        declaredSettings = settings.declared
        try settings.validate()
    }

    /// How long a revoked session stays listed: as long as any access token issued for it could be valid.
    var revocationWindow: TimeInterval { accessTokenLifetime + AccessTokenPolicy.standard.leeway + 60 }
}
