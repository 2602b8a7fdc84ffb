@testable import AuthService
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Postgres
import TestSupport
import Testing

@Suite struct SessionTests {
    @Test func refreshRotatesTheTokenAndKeepsTheSession() async throws {
        try await AuthTestApp.withApp { api, _ in
            let first = try await api.signUp()
            let response = try await api.refresh(first.refreshToken)
            #expect(response.status == .ok)
            #expect(response.headers[.cacheControl] == "no-store")
            let second = try response.decode(AuthSession.self)
            #expect(second.sessionId == first.sessionId)
            #expect(second.refreshToken != first.refreshToken)
            #expect(second.user == first.user)
            #expect(try await api.call(.get, "/v1/auth/me", token: second.accessToken).status == .ok)
        }
    }

    @Test func aRetryWithinTheGraceWindowGetsTheSamePair() async throws {
        try await AuthTestApp.withApp { api, _ in
            let first = try await api.signUp()
            let rotated = try await api.refresh(first.refreshToken).decode(AuthSession.self)
            // The response was lost on the way to the phone; it retries with the token it still has.
            let retried = try await api.refresh(first.refreshToken)
            #expect(retried.status == .ok)
            let again = try retried.decode(AuthSession.self)
            #expect(again.refreshToken == rotated.refreshToken)
            #expect(again.accessToken == rotated.accessToken)
            // The session goes on normally with that token.
            #expect(try await api.refresh(again.refreshToken).status == .ok)
        }
    }

    @Test func presentingARetiredTokenEndsTheSession() async throws {
        try await AuthTestApp.withApp { api, _ in
            let first = try await api.signUp()
            let second = try await api.refresh(first.refreshToken).decode(AuthSession.self)
            let third = try await api.refresh(second.refreshToken).decode(AuthSession.self)
            // An attacker replays the first token, two rotations old.
            let reused = try await api.refresh(first.refreshToken)
            #expect(reused.status == .unauthorized)
            #expect(reused.problem?.type == .refreshTokenReused)
            // The whole session is gone: the legitimate holder of the newest token is signed out too.
            let after = try await api.refresh(third.refreshToken)
            #expect(after.status == .unauthorized)
            #expect(after.problem?.type == .invalidRefreshToken)
            #expect(try await api.call(.get, "/v1/auth/me", token: third.accessToken).status == .unauthorized)
        }
    }

    @Test func withoutGraceTheImmediateRetryCountsAsReuse() async throws {
        try await AuthTestApp.withApp(environment: ["REFRESH_REUSE_GRACE_SECONDS": "0"]) { api, _ in
            let first = try await api.signUp()
            _ = try await api.refresh(first.refreshToken)
            try await Task.sleep(for: .milliseconds(1100))
            #expect(try await api.refresh(first.refreshToken).problem?.type == .refreshTokenReused)
        }
    }

    @Test func unknownAndMalformedRefreshTokensAreRefused() async throws {
        try await AuthTestApp.withApp { api, _ in
            for token in ["", "short", String(repeating: "A", count: 43), "🙂"] {
                let response = try await api.refresh(token)
                #expect(response.status == .unauthorized)
                #expect(response.problem?.type == .invalidRefreshToken)
            }
        }
    }

    @Test func idleSessionsExpire() async throws {
        try await AuthTestApp.withApp { api, database in
            let session = try await api.signUp()
            let pool = database.makePool(size: 1)
            try await pool.query("""
                UPDATE auth.sessions SET idle_expires_at = now() - interval '1 second' WHERE id = \(session.sessionId)
                """)
            await pool.close()
            #expect(try await api.refresh(session.refreshToken).problem?.type == .invalidRefreshToken)
            #expect(try await api.call(.get, "/v1/auth/me", token: session.accessToken).status == .unauthorized)
        }
    }

    /// Three devices of one user, and a bystander whose session must never be touched.
    static func devices(_ api: AuthClient) async throws -> (phone: AuthSession, tablet: AuthSession,
                                                            laptop: AuthSession, bystander: AuthSession) {
        let email = AuthTestApp.uniqueEmail()
        let phone = try await api.signUp(email: email)
        let tablet = try await api.signIn(email: email).decode(AuthSession.self)
        let laptop = try await api.signIn(email: email).decode(AuthSession.self)
        return (phone, tablet, laptop, try await api.signUp())
    }

    static func isSignedIn(_ api: AuthClient, _ session: AuthSession) async throws -> Bool {
        try await api.call(.get, "/v1/auth/me", token: session.accessToken).status == .ok
    }

    @Test func logoutEndsThisSessionOnly() async throws {
        try await AuthTestApp.withApp { api, _ in
            let (phone, tablet, laptop, bystander) = try await Self.devices(api)
            #expect(try await api.call(.post, "/v1/auth/logout", token: phone.accessToken).status == .noContent)
            #expect(try await !Self.isSignedIn(api, phone))
            #expect(try await api.refresh(phone.refreshToken).status == .unauthorized)
            for other in [tablet, laptop, bystander] { #expect(try await Self.isSignedIn(api, other)) }
        }
    }

    @Test func aMalformedLogoutBodyIsA400AndEndsNothing() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            for body in ["[[[", #"{"refreshToken":5}"#, "null"] {
                let response = try await api.client.execute(
                    uri: "/v1/auth/logout", method: .post,
                    headers: [.authorization: "Bearer \(session.accessToken)", .contentType: "application/json"],
                    body: ByteBuffer(string: body)) { $0 }
                #expect(response.status == .badRequest, "\(body)")
            }
            #expect(try await Self.isSignedIn(api, session))
        }
    }

    @Test func logoutOthersKeepsThisSession() async throws {
        try await AuthTestApp.withApp { api, _ in
            let (phone, tablet, laptop, bystander) = try await Self.devices(api)
            let response = try await api.call(.post, "/v1/auth/logout?scope=others", token: phone.accessToken)
            #expect(response.status == .noContent)
            #expect(try await Self.isSignedIn(api, phone))
            for ended in [tablet, laptop] {
                #expect(try await !Self.isSignedIn(api, ended))
                #expect(try await api.refresh(ended.refreshToken).status == .unauthorized)
            }
            #expect(try await Self.isSignedIn(api, bystander))
        }
    }

    @Test func logoutGlobalEndsEverySessionOfTheUser() async throws {
        try await AuthTestApp.withApp { api, _ in
            let (phone, tablet, laptop, bystander) = try await Self.devices(api)
            #expect(try await api.call(.post, "/v1/auth/logout?scope=global", token: tablet.accessToken).status
                    == .noContent)
            for ended in [phone, tablet, laptop] { #expect(try await !Self.isSignedIn(api, ended)) }
            #expect(try await Self.isSignedIn(api, bystander))
            let bad = try await api.call(.post, "/v1/auth/logout?scope=everything", token: bystander.accessToken)
            #expect(bad.status == .badRequest)
        }
    }

    @Test func logoutWithTheRefreshTokenAloneWorksAndIsIdempotent() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            for _ in 0..<2 {
                let response = try await api.call(.post, "/v1/auth/logout",
                                                  json: RefreshRequest(refreshToken: session.refreshToken))
                #expect(response.status == .noContent)
            }
            #expect(try await !Self.isSignedIn(api, session))
            let anonymous = try await api.call(.post, "/v1/auth/logout")
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.problem?.type == .authenticationRequired)
        }
    }

    @Test func anInvalidAccessTokenFallsBackToTheRefreshTokenInTheBody() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            let response = try await api.call(.post, "/v1/auth/logout", token: "expired.or.garbage",
                                              json: RefreshRequest(refreshToken: session.refreshToken))
            #expect(response.status == .noContent)
            #expect(try await !Self.isSignedIn(api, session))
        }
    }

    /// `logout?scope=global` with a retired refresh token is refused, and every session in `sparing` still works.
    static func expectGlobalLogoutRefused(_ api: AuthClient, retired token: String, sparing sessions: [AuthSession])
        async throws
    {
        let response = try await api.call(.post, "/v1/auth/logout?scope=global", json: RefreshRequest(refreshToken: token))
        #expect(response.status == .unauthorized)
        #expect(response.problem?.type == .invalidRefreshToken)
        for session in sessions { #expect(try await isSignedIn(api, session)) }
    }

    /// A long-retired refresh token (say, from an old backup of the phone) cannot sign the user out everywhere.
    @Test func aRetiredRefreshTokenCannotEndOtherSessions() async throws {
        try await AuthTestApp.withApp { api, _ in
            let (phone, tablet, _, _) = try await Self.devices(api)
            var current = phone
            for _ in 0..<2 { current = try await api.refresh(current.refreshToken).decode(AuthSession.self) }
            try await Self.expectGlobalLogoutRefused(api, retired: phone.refreshToken, sparing: [tablet, current])
        }
    }

    /// The token a refresh just replaced logs out only within the grace window a refresh gives it; after that it is as
    /// retired as any older one.
    @Test func aTokenReplacedOnceActsOnlyWithinTheGraceWindow() async throws {
        try await AuthTestApp.withApp(environment: ["REFRESH_REUSE_GRACE_SECONDS": "0"]) { api, _ in
            let (phone, tablet, _, _) = try await Self.devices(api)
            let current = try await api.refresh(phone.refreshToken).decode(AuthSession.self)
            try await Task.sleep(for: .milliseconds(20))  // past a grace of 0 s
            try await Self.expectGlobalLogoutRefused(api, retired: phone.refreshToken, sparing: [tablet, current])
        }
        try await AuthTestApp.withApp { api, _ in
            let (phone, tablet, _, _) = try await Self.devices(api)
            let current = try await api.refresh(phone.refreshToken).decode(AuthSession.self)
            // Within the default 30 s: the app whose refresh response was lost can still sign this device out.
            #expect(try await api.call(.post, "/v1/auth/logout", json: RefreshRequest(refreshToken: phone.refreshToken))
                .status == .noContent)
            #expect(try await !Self.isSignedIn(api, current))
            #expect(try await Self.isSignedIn(api, tablet))
        }
    }

    @Test func sessionsAreListedAndEndedOneByOne() async throws {
        try await AuthTestApp.withApp { api, _ in
            let (phone, tablet, laptop, bystander) = try await Self.devices(api)
            let list = try await api.call(.get, "/v1/auth/sessions", token: phone.accessToken).decode(SessionList.self)
            #expect(Set(list.sessions.map(\.id)) == [phone.sessionId, tablet.sessionId, laptop.sessionId])
            #expect(list.sessions.filter(\.current).map(\.id) == [phone.sessionId])

            // Someone else's session is indistinguishable from one that does not exist.
            let foreign = try await api.call(.delete, "/v1/auth/sessions/\(bystander.sessionId)", token: phone.accessToken)
            #expect(foreign.status == .notFound)
            #expect(try await Self.isSignedIn(api, bystander))
            #expect(try await api.call(.delete, "/v1/auth/sessions/not-a-uuid", token: phone.accessToken).status
                    == .badRequest)

            let ended = try await api.call(.delete, "/v1/auth/sessions/\(tablet.sessionId)", token: phone.accessToken)
            #expect(ended.status == .noContent)
            #expect(try await !Self.isSignedIn(api, tablet))
            let after = try await api.call(.get, "/v1/auth/sessions", token: phone.accessToken).decode(SessionList.self)
            #expect(Set(after.sessions.map(\.id)) == [phone.sessionId, laptop.sessionId])
        }
    }

    @Test func endedSessionsArePublishedForOtherServices() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            let before = try await api.feed("/v1/auth/revocations")
            #expect(try before.decode(RevokedSessions.self).sessionIds.isEmpty)
            let etag = try #require(before.headers[.eTag])
            #expect(try await api.feed("/v1/auth/revocations", headers: [.ifNoneMatch: etag]).status == .notModified)
            _ = try await api.call(.post, "/v1/auth/logout", token: session.accessToken)
            let after = try await api.feed("/v1/auth/revocations", headers: [.ifNoneMatch: etag])
            #expect(after.status == .ok)
            let list = try after.decode(RevokedSessions.self)
            #expect(list.sessionIds == [session.sessionId])
            #expect(list.windowSeconds >= 900)
        }
    }
}
