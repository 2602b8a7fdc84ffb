@testable import AuthService
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing

/// A refresh whose answer was lost while the app was suspended, retried with the same token and the same
/// `Idempotency-Key` long after the grace window: the same refresh token again, not reuse. A copy of the token
/// without the key is still reuse, and ends the session.
@Suite struct RefreshRecoveryTests {
    /// No grace at all, so that every retry below is past it.
    static let noGrace = ["REFRESH_REUSE_GRACE_SECONDS": "0"]

    static func pastTheGrace() async throws { try await Task.sleep(for: .milliseconds(20)) }

    @Test func aRetryWithTheSameKeyGetsTheSameRefreshToken() async throws {
        try await AuthTestApp.withApp(environment: Self.noGrace) { api, _ in
            let first = try await api.signUp()
            let key = UUID().uuidString
            let lost = try await api.refresh(first.refreshToken, key: key).decode(AuthSession.self)
            try await Self.pastTheGrace()
            let retried = try await api.refresh(first.refreshToken, key: key)
            #expect(retried.status == .ok)
            let recovered = try retried.decode(AuthSession.self)
            #expect(recovered.refreshToken == lost.refreshToken)
            #expect(recovered.sessionId == first.sessionId)
            #expect(recovered.expiresIn > 800)  // a fresh access token: the lost one may have expired meanwhile
            #expect(try await api.call(.get, "/v1/auth/me", token: recovered.accessToken).status == .ok)
            // The session goes on with that token, and the retired one is retired for good once it is used.
            let next = try await api.refresh(recovered.refreshToken, key: UUID().uuidString)
            #expect(next.status == .ok)
            let stale = try await api.refresh(first.refreshToken, key: key)
            #expect(stale.problem?.type == .refreshTokenReused)
        }
    }

    @Test func theTokenWithoutItsKeyIsStillReuse() async throws {
        try await AuthTestApp.withApp(environment: Self.noGrace) { api, _ in
            let first = try await api.signUp()
            let rotated = try await api.refresh(first.refreshToken, key: UUID().uuidString).decode(AuthSession.self)
            try await Self.pastTheGrace()
            for stolenCopy in [nil, "a guess at the key"] {
                let replayed = try await api.refresh(first.refreshToken, key: stolenCopy)
                #expect(replayed.status == .unauthorized)
            }
            // The first replay ended the session: the device's own token is refused now too.
            #expect(try await api.refresh(rotated.refreshToken).problem?.type == .invalidRefreshToken)
            #expect(try await api.call(.get, "/v1/auth/me", token: rotated.accessToken).status == .unauthorized)
        }
    }

    @Test func aKeyOnlyRecoversTheRefreshItWasSentWith() async throws {
        try await AuthTestApp.withApp(environment: Self.noGrace) { api, _ in
            // A refresh sent without a key leaves nothing to recover with.
            let first = try await api.signUp()
            _ = try await api.refresh(first.refreshToken)
            try await Self.pastTheGrace()
            #expect(try await api.refresh(first.refreshToken, key: "late").problem?.type == .refreshTokenReused)

            // Another session's key is not this one's.
            let other = try await api.signUp()
            let key = UUID().uuidString
            _ = try await api.refresh(other.refreshToken, key: key)
            let third = try await api.signUp()
            _ = try await api.refresh(third.refreshToken, key: UUID().uuidString)
            try await Self.pastTheGrace()
            #expect(try await api.refresh(third.refreshToken, key: key).problem?.type == .refreshTokenReused)
            #expect(try await api.refresh(other.refreshToken, key: key).status == .ok)
        }
    }

    @Test func pastTheRetryWindowTheKeyNoLongerHelps() async throws {
        try await AuthTestApp.withApp(environment: Self.noGrace.merging(["REFRESH_RETRY_WINDOW_SECONDS": "0"]) { $1 }) {
            api, _ in
            let first = try await api.signUp()
            let key = UUID().uuidString
            _ = try await api.refresh(first.refreshToken, key: key)
            try await Self.pastTheGrace()
            #expect(try await api.refresh(first.refreshToken, key: key).problem?.type == .refreshTokenReused)
        }
    }

    @Test func aKeyOfTheWrongShapeIsRefused() async throws {
        try await AuthTestApp.withApp { api, _ in
            let first = try await api.signUp()
            let tooLong = try await api.refresh(first.refreshToken, key: String(repeating: "k", count: 201))
            #expect(tooLong.status == .badRequest)
            #expect(tooLong.problem?.type == .validationFailed)
            #expect(try await api.refresh(first.refreshToken).status == .ok)  // nothing was exchanged
        }
    }
}
