@testable import AuthService
import Contracts
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import JWTKit
import Postgres
import ServiceKit
import TestSupport
import Testing

/// Every way an access token can be forged or stale ends in 401 `invalid-token`, but for a genuine token past its
/// expiry: 401 `token-expired`.
@Suite struct TokenTests {
    /// Claims with every field optional and free, to forge tokens.
    struct LooseClaims: JWTPayload {
        var iss: String? = AccessTokenPolicy.standard.issuer
        var aud: String? = AccessTokenPolicy.standard.audience
        var sub: String?
        var sid: String?
        var iat: Int? = Int(Date().timeIntervalSince1970)
        var nbf: Int? = Int(Date().timeIntervalSince1970)
        var exp: Int? = Int(Date().timeIntervalSince1970) + 300
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The service's real signing key, read from its table.
    static func serviceKey(_ database: TestDatabase) async throws -> (kid: String, key: EdDSA.PrivateKey) {
        let pool = database.makePool(size: 1)
        let row = try await pool.query("SELECT kid, private_key FROM auth.signing_keys").single()
        await pool.close()
        let secret = try row.decode(Data.self, column: "private_key")
        return (try row.decode(String.self, column: "kid"),
                EdDSA.PrivateKey(backing: try Curve25519.Signing.PrivateKey(rawRepresentation: secret)))
    }

    static func sign(_ claims: LooseClaims, with key: EdDSA.PrivateKey, kid: String) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(eddsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    static func base64URL(_ json: String) -> String { Data(json.utf8).base64URLEncodedString() }

    static func expectRejected(_ api: AuthClient, _ token: String, _ comment: Comment,
                               as type: ProblemType = .invalidToken) async throws {
        let response = try await api.call(.get, "/v1/auth/me", token: token)
        #expect(response.status == .unauthorized, comment)
        #expect(response.problem?.type == type, comment)
        #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, comment)
    }

    @Test func forgedAndStaleTokensAreRefused() async throws {
        try await AuthTestApp.withApp { api, database in
            let session = try await api.signUp()
            let (kid, key) = try await Self.serviceKey(database)
            var claims = LooseClaims(sub: session.user.id.uuidString, sid: session.sessionId.uuidString)
            // Sanity: a token forged with the real key and right claims is accepted, so the refusals below are real.
            #expect(try await api.call(.get, "/v1/auth/me", token: Self.sign(claims, with: key, kid: kid)).status == .ok)

            let payload = Self.base64URL(#"{"iss":"favoriteme-auth","aud":"favoriteme","sub":"\#(session.user.id)","sid":"\#(session.sessionId)","exp":\#(claims.exp!)}"#)
            try await Self.expectRejected(api, Self.base64URL(#"{"alg":"none","typ":"JWT"}"#) + ".\(payload).", "alg none")

            // HS256 keyed with the public key (the classic algorithm-confusion attack).
            let publicKey = key.publicKey.rawRepresentation
            let hsHeader = Self.base64URL(#"{"alg":"HS256","typ":"JWT","kid":"\#(kid)"}"#)
            for secret in [publicKey, Data(publicKey.base64URLEncodedString().utf8)] {
                let mac = HMAC<SHA256>.authenticationCode(for: Data("\(hsHeader).\(payload)".utf8),
                                                          using: SymmetricKey(data: secret))
                try await Self.expectRejected(api, "\(hsHeader).\(payload).\(Data(mac).base64URLEncodedString())",
                                              "HS256 with the public key")
            }

            try await Self.expectRejected(api, try await Self.sign(claims, with: EdDSA.PrivateKey(), kid: "unknown"),
                                          "unknown kid")
            try await Self.expectRejected(api, try await Self.sign(claims, with: EdDSA.PrivateKey(), kid: kid),
                                          "known kid, other key")

            // Tampered payload: another user's id under the original signature.
            let parts = session.accessToken.split(separator: ".")
            let tampered = Self.base64URL(#"{"iss":"favoriteme-auth","aud":"favoriteme","sub":"\#(UUID())","sid":"\#(session.sessionId)","iat":\#(claims.iat!),"nbf":\#(claims.nbf!),"exp":\#(claims.exp!)}"#)
            try await Self.expectRejected(api, "\(parts[0]).\(tampered).\(parts[2])", "tampered payload")

            var expired = claims
            expired.iat = Int(Date().timeIntervalSince1970) - 1000
            expired.nbf = expired.iat
            expired.exp = Int(Date().timeIntervalSince1970) - 60
            try await Self.expectRejected(api, try await Self.sign(expired, with: key, kid: kid), "expired",
                                          as: .tokenExpired)
            // Past its expiry but forged: the signature is refused first, so expiry tells a forger nothing.
            try await Self.expectRejected(api, try await Self.sign(expired, with: EdDSA.PrivateKey(), kid: kid),
                                          "expired and forged")

            var early = claims
            early.nbf = Int(Date().timeIntervalSince1970) + 120
            try await Self.expectRejected(api, try await Self.sign(early, with: key, kid: kid), "not yet valid")

            var tooLong = claims
            tooLong.exp = claims.iat! + 24 * 3600
            try await Self.expectRejected(api, try await Self.sign(tooLong, with: key, kid: kid), "lifetime too long")

            var wrongAudience = claims
            wrongAudience.aud = "someone-else"
            try await Self.expectRejected(api, try await Self.sign(wrongAudience, with: key, kid: kid), "wrong aud")

            var wrongIssuer = claims
            wrongIssuer.iss = "https://evil.example"
            try await Self.expectRejected(api, try await Self.sign(wrongIssuer, with: key, kid: kid), "wrong iss")

            var noSession = claims
            noSession.sid = nil
            try await Self.expectRejected(api, try await Self.sign(noSession, with: key, kid: kid), "no sid")

            claims.sid = UUID().uuidString
            try await Self.expectRejected(api, try await Self.sign(claims, with: key, kid: kid), "unknown session")

            try await Self.expectRejected(api, session.refreshToken, "refresh token as access token")
            try await Self.expectRejected(api, "garbage", "not a JWT")

            let missing = try await api.call(.get, "/v1/auth/me")
            #expect(missing.status == .unauthorized)
            #expect(missing.problem?.type == .authenticationRequired)
        }
    }

    @Test func accessTokensCarryTheDocumentedClaims() async throws {
        try await AuthTestApp.withApp { api, database in
            let session = try await api.signUp()
            let parts = session.accessToken.split(separator: ".").map(String.init)
            let header = try JSONDecoder().decode([String: String].self, from: try #require(Data(base64URLEncoded: parts[0])))
            let (kid, _) = try await Self.serviceKey(database)
            #expect(header["alg"] == "EdDSA")
            #expect(header["kid"] == kid)
            let claims = try JSONDecoder().decode(LooseClaims.self, from: try #require(Data(base64URLEncoded: parts[1])))
            #expect(claims.sub == session.user.id.uuidString.lowercased())
            #expect(claims.sid == session.sessionId.uuidString.lowercased())
            #expect(claims.iss == "favoriteme-auth")
            #expect(claims.aud == "favoriteme")
            let lifetime = try #require(claims.exp) - #require(claims.iat)
            #expect(lifetime == 900)
        }
    }

    @Test func theKeySetIsPublishedWithCacheHeaders() async throws {
        try await AuthTestApp.withApp { api, database in
            let response = try await api.call(.get, "/.well-known/jwks.json")
            #expect(response.status == .ok)
            #expect(response.headers[.cacheControl] == "public, max-age=300")
            let etag = try #require(response.headers[.eTag])
            let keySet = try response.decode(JWKS.self)
            let (kid, key) = try await Self.serviceKey(database)
            let published = try #require(keySet.keys.first)
            #expect(keySet.keys.count == 1)
            #expect(published.keyIdentifier?.string == kid)
            #expect(published.x == key.publicKey.rawRepresentation.base64URLEncodedString())
            #expect(published.privateExponent == nil)
            let again = try await api.call(.get, "/.well-known/jwks.json",
                                           headers: [.ifNoneMatch: etag])
            #expect(again.status == .notModified)
        }
    }
}
