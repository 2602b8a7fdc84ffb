@testable import AuthService
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Postgres
import ServiceKit
import TestSupport
import Testing

@Suite struct AccountTests {
    @Test func signUpReturnsTheUserAndATokenPairThatWorks() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail("Ana")
            let session = try await api.signUp(email: "  \(email.uppercased()) ", experience: "rijksmuseum")
            #expect(session.user.email == email.lowercased())
            #expect(session.user.experience == .rijksmuseum)
            #expect(session.tokenType == "Bearer")
            #expect((1...900).contains(session.expiresIn))
            #expect(session.refreshToken != session.accessToken)
            let me = try await api.call(.get, "/v1/auth/me", token: session.accessToken)
            #expect(me.status == .ok)
            #expect(try me.decode(UserProfile.self) == session.user)
            #expect(me.headers[.cacheControl] == "no-store")
        }
    }

    /// The profile and the session list carry an `ETag` from their body: 304 while nothing changed, 200 with a new
    /// tag once something did.
    @Test func theProfileAndTheSessionListAreRevalidated() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let session = try await api.signUp(email: email)
            for path in ["/v1/auth/me", "/v1/auth/sessions"] {
                let first = try await api.call(.get, path, token: session.accessToken)
                let etag = try #require(first.headers[.eTag], "\(path)")
                let unchanged = try await api.call(.get, path, token: session.accessToken, headers: [.ifNoneMatch: etag])
                #expect(unchanged.status == .notModified, "\(path)")
                #expect(unchanged.headers[.eTag] == etag)
                #expect(unchanged.body.readableBytes == 0)
            }
            let profileTag = try #require(try await api.call(.get, "/v1/auth/me", token: session.accessToken)
                .headers[.eTag])
            _ = try await api.call(.patch, "/v1/auth/me", token: session.accessToken,
                                   json: ProfileUpdate(experience: "rijksmuseum"))
            let changed = try await api.call(.get, "/v1/auth/me", token: session.accessToken,
                                             headers: [.ifNoneMatch: profileTag])
            #expect(changed.status == .ok)
            #expect(changed.headers[.eTag] != profileTag)
            #expect(try changed.decode(UserProfile.self).experience == .rijksmuseum)

            let sessionsTag = try #require(try await api.call(.get, "/v1/auth/sessions", token: session.accessToken)
                .headers[.eTag])
            _ = try await api.signIn(email: email)  // a second device
            let listed = try await api.call(.get, "/v1/auth/sessions", token: session.accessToken,
                                            headers: [.ifNoneMatch: sessionsTag])
            #expect(listed.status == .ok)
            #expect(try listed.decode(SessionList.self).sessions.count == 2)
        }
    }

    @Test func anEmailIsTakenWhateverItsCase() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            let again = try await api.call(.post, "/v1/auth/signup", json: SignUpRequest(
                email: email.uppercased(), password: "another fine password", experience: "ticketmaster"))
            #expect(again.status == .conflict)
            #expect(again.problem?.type == .emailTaken)
            #expect(again.headers[.contentType] == ProblemDetails.mediaType)
        }
    }

    @Test func everyInvalidFieldIsListed() async throws {
        try await AuthTestApp.withApp { api, _ in
            let response = try await api.call(.post, "/v1/auth/signup", json: SignUpRequest(
                email: "not-an-email", password: "short", experience: "netflix"))
            #expect(response.status == .badRequest)
            let problem = try #require(response.problem)
            #expect(problem.type == .validationFailed)
            #expect(Set(problem.errors?.map(\.field) ?? []) == ["email", "password", "experience"])
            #expect(!problem.requestId.isEmpty)
        }
    }

    @Test(arguments: ["password", "Password1", "12345678", "qwertyuiop", "iloveyou"])
    func commonPasswordsAreRefused(_ password: String) async throws {
        try await AuthTestApp.withApp { api, _ in
            let response = try await api.call(.post, "/v1/auth/signup", json: SignUpRequest(
                email: AuthTestApp.uniqueEmail(), password: password, experience: "ticketmaster"))
            #expect(response.status == .badRequest)
            #expect(response.problem?.errors?.first?.field == "password")
        }
    }

    /// bcrypt ignores bytes past 72; the pre-hash makes every character count.
    @Test func longPasswordsAreAcceptedAndNotTruncated() async throws {
        try await AuthTestApp.withApp { api, _ in
            let stem = String(repeating: "ünïcödé-", count: 10)  // 80 characters, 150 UTF-8 bytes
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email, password: stem + "A")
            #expect(try await api.signIn(email: email, password: stem + "A").status == .ok)
            #expect(try await api.signIn(email: email, password: stem + "B").status == .unauthorized)
        }
    }

    @Test func unknownEmailAndWrongPasswordGetTheSameAnswer() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            let headers: HTTPFields = [HTTPField.Name("X-Request-ID")!: "same-request-id"]
            let wrongPassword = try await api.signIn(email: email, password: "not the password", headers: headers)
            let unknownEmail = try await api.signIn(email: AuthTestApp.uniqueEmail(), password: "not the password",
                                                    headers: headers)
            #expect(wrongPassword.status == .unauthorized)
            #expect(wrongPassword.status == unknownEmail.status)
            #expect(wrongPassword.problem?.type == .invalidCredentials)
            // Same request id on both, so the bodies can be compared byte for byte.
            #expect(String(buffer: wrongPassword.body) == String(buffer: unknownEmail.body))
            #expect(wrongPassword.headers[.retryAfter] == unknownEmail.headers[.retryAfter])
            let metrics = String(buffer: try await api.call(.get, "/metrics").body)
            #expect(metrics.contains(#"auth_sign_ins_total{outcome="invalid-credentials"} 2"#))
        }
    }

    @Test func signInOpensANewSession() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let first = try await api.signUp(email: email)
            let response = try await api.signIn(email: email.uppercased())
            #expect(response.status == .ok)
            let second = try response.decode(AuthSession.self)
            #expect(second.sessionId != first.sessionId)
            #expect(second.user == first.user)
        }
    }

    @Test func patchChangesOnlyExperienceAndPreferences() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            let token = session.accessToken
            var response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(
                experience: "rijksmuseum", preferences: ["listLayout": "grid", "theme": "dark"]))
            #expect(response.status == .ok)
            var profile = try response.decode(UserProfile.self)
            #expect(profile.experience == .rijksmuseum)
            #expect(profile.preferences == ["listLayout": "grid", "theme": "dark"])

            // Merge patch: null removes a key, absent keys stay.
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: ProfileUpdate(preferences: ["theme": String?.none]))
            profile = try response.decode(UserProfile.self)
            #expect(profile.preferences == ["listLayout": "grid"])
            #expect(profile.experience == .rijksmuseum)

            struct EmailChange: Encodable, Sendable { let email: String }
            response = try await api.call(.patch, "/v1/auth/me", token: token,
                                          json: EmailChange(email: "someone-else@example.com"))
            #expect(response.status == .badRequest)
            #expect(response.problem?.errors?.first?.field == "email")
            response = try await api.call(.patch, "/v1/auth/me", token: token, json: ProfileUpdate(experience: "netflix"))
            #expect(response.problem?.errors?.first?.field == "experience")
            let me = try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self)
            #expect(me.email == session.user.email)
            #expect(me.experience == .rijksmuseum)
        }
    }

    /// U+0000 cannot be stored by PostgreSQL (text or jsonb): it must be the client's 400, never a 500 from the database.
    @Test func controlCharactersInNamesAndPreferencesAre400s() async throws {
        try await AuthTestApp.withApp { api, _ in
            let signUp = try await api.call(.post, "/v1/auth/signup", json: SignUpRequest(
                email: AuthTestApp.uniqueEmail(), password: AuthTestApp.password, experience: "ticketmaster",
                deviceName: "Ana\u{0}s phone"))
            #expect(signUp.status == .badRequest)
            #expect(signUp.problem?.errors?.map(\.field) == ["deviceName"])
            // Format characters are not control characters: an emoji family is joined by U+200D.
            let emoji = try await api.call(.post, "/v1/auth/signup", json: SignUpRequest(
                email: AuthTestApp.uniqueEmail(), password: AuthTestApp.password, experience: "ticketmaster",
                deviceName: "Ana's \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467} phone"))
            #expect(emoji.status == .created)

            let token = try await api.signUp().accessToken
            for value in ["dark\u{0}", "line\nbreak"] {
                let patch = try await api.call(.patch, "/v1/auth/me", token: token,
                                               json: ProfileUpdate(preferences: ["theme": value]))
                #expect(patch.status == .badRequest)
                #expect(patch.problem?.errors?.map(\.field) == ["preferences.theme"])
            }
            #expect(try await api.call(.get, "/v1/auth/me", token: token).decode(UserProfile.self).preferences.isEmpty)
        }
    }

    @Test func aNullDeviceNameCountsAsAbsent() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let fields: [String: String?] = [
                "email": email, "password": AuthTestApp.password, "experience": "rijksmuseum", "deviceName": nil,
            ]
            let signUp = try await api.call(.post, "/v1/auth/signup", json: fields)
            #expect(signUp.status == .created)
            var signInFields = fields
            signInFields["experience"] = nil
            let signIn = try await api.call(.post, "/v1/auth/login", json: signInFields)
            #expect(signIn.status == .ok)
        }
    }

    @Test func changingThePasswordEndsTheOtherSessions() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let phone = try await api.signUp(email: email)
            let laptop = try await api.signIn(email: email).decode(AuthSession.self)
            let newPassword = "a brand new passphrase"

            let wrong = try await api.call(.post, "/v1/auth/me/password", token: phone.accessToken,
                                           json: PasswordChange(currentPassword: "nope nope", newPassword: newPassword))
            #expect(wrong.status == .forbidden)
            #expect(wrong.problem?.type == .passwordConfirmationFailed)

            let changed = try await api.call(.post, "/v1/auth/me/password", token: phone.accessToken, json: PasswordChange(
                currentPassword: AuthTestApp.password, newPassword: newPassword))
            #expect(changed.status == .noContent)
            #expect(try await api.call(.get, "/v1/auth/me", token: phone.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/auth/me", token: laptop.accessToken).status == .unauthorized)
            #expect(try await api.refresh(laptop.refreshToken).status == .unauthorized)
            #expect(try await api.signIn(email: email).status == .unauthorized)
            #expect(try await api.signIn(email: email, password: newPassword).status == .ok)
        }
    }

    /// A sign-up whose answer was lost is retried with the same `Idempotency-Key`: 201 again, for the same account,
    /// where it would be 409 `email-taken`. The same key with another password is someone else: still 409.
    @Test func aSignUpRetriedWithItsKeyIsAnsweredAgain() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let body = SignUpRequest(email: email, password: AuthTestApp.password, experience: "rijksmuseum")
            let key: HTTPFields = [.idempotencyKey: "signup-1"]
            let first = try await api.call(.post, "/v1/auth/signup", json: body, headers: key)
            #expect(first.status == .created)
            let retry = try await api.call(.post, "/v1/auth/signup", json: body, headers: key)
            #expect(retry.status == .created)
            let (created, again) = (try first.decode(AuthSession.self), try retry.decode(AuthSession.self))
            #expect(again.user == created.user)
            #expect(again.sessionId != created.sessionId)  // a new session; the first one stays
            #expect(try await api.call(.get, "/v1/auth/me", token: again.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/auth/me", token: created.accessToken).status == .ok)

            var otherPassword = body
            otherPassword.password = "another secret phrase"
            let impostor = try await api.call(.post, "/v1/auth/signup", json: otherPassword, headers: key)
            #expect(impostor.status == .conflict)
            #expect(impostor.problem?.type == .emailTaken)
            let unkeyed = try await api.call(.post, "/v1/auth/signup", json: body)
            #expect(unkeyed.status == .conflict)
            let otherKey = try await api.call(.post, "/v1/auth/signup", json: body, headers: [.idempotencyKey: "other"])
            #expect(otherKey.status == .conflict)
            let tooLong = try await api.call(.post, "/v1/auth/signup", json: body,
                                             headers: [.idempotencyKey: String(repeating: "k", count: 201)])
            #expect(tooLong.status == .badRequest)
            #expect(tooLong.problem?.type == .validationFailed)
        }
    }

    /// A password change whose answer was lost is retried with the same key: by then the current password is the new
    /// one, so without the key it would be 403. With it, 204 again, and the sessions the change kept stay.
    @Test func aPasswordChangeRetriedWithItsKeyIsAnsweredAgain() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let phone = try await api.signUp(email: email)
            let change = PasswordChange(currentPassword: AuthTestApp.password, newPassword: "a brand new passphrase")
            let key: HTTPFields = [.idempotencyKey: "password-1"]
            let path = "/v1/auth/me/password"
            #expect(try await api.call(.post, path, token: phone.accessToken, json: change, headers: key).status
                == .noContent)
            // A device signed in with the new password after the change: the retry must not end its session.
            let laptop = try await api.signIn(email: email, password: change.newPassword).decode(AuthSession.self)
            let retry = try await api.call(.post, path, token: phone.accessToken, json: change, headers: key)
            #expect(retry.status == .noContent)
            #expect(try await api.call(.get, "/v1/auth/me", token: phone.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/auth/me", token: laptop.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/auth/sessions", token: phone.accessToken)
                .decode(SessionList.self).sessions.count == 2)

            let unkeyed = try await api.call(.post, path, token: phone.accessToken, json: change)
            #expect(unkeyed.status == .forbidden)
            #expect(unkeyed.problem?.type == .passwordConfirmationFailed)
            var otherNewPassword = change
            otherNewPassword.newPassword = "yet another passphrase"
            let notARetry = try await api.call(.post, path, token: phone.accessToken, json: otherNewPassword,
                                               headers: key)
            #expect(notARetry.status == .forbidden)
            #expect(notARetry.problem?.type == .passwordConfirmationFailed)
        }
    }

    @Test func deletingTheAccountNeedsThePasswordAndEndsEverything() async throws {
        try await AuthTestApp.withApp { api, database in
            let email = AuthTestApp.uniqueEmail()
            let session = try await api.signUp(email: email)
            let other = try await api.signIn(email: email).decode(AuthSession.self)

            let refused = try await api.call(.delete, "/v1/auth/me", token: session.accessToken,
                                             json: AccountDeletion(password: "wrong password"))
            #expect(refused.status == .forbidden)
            #expect(try await api.call(.get, "/v1/auth/me", token: session.accessToken).status == .ok)

            let deleted = try await api.call(.delete, "/v1/auth/me", token: session.accessToken,
                                             json: AccountDeletion(password: AuthTestApp.password))
            #expect(deleted.status == .noContent)
            for token in [session.accessToken, other.accessToken] {
                let response = try await api.call(.get, "/v1/auth/me", token: token)
                #expect(response.status == .unauthorized)
                #expect(response.problem?.type == .invalidToken)
            }
            #expect(try await api.refresh(other.refreshToken).status == .unauthorized)
            #expect(try await api.signIn(email: email).status == .unauthorized)
            // The revocations outlive the account, so other services keep refusing its tokens.
            let revoked = try await api.feed("/v1/auth/revocations").decode(RevokedSessions.self)
            #expect(Set(revoked.sessionIds).isSuperset(of: [session.sessionId, other.sessionId]))
            let pool = database.makePool(size: 1)
            let users = try await pool.query("SELECT count(*) FROM auth.users").scalar(Int.self)
            await pool.close()
            #expect(users == 0)
            // The deletion is published for the services that hold the user's data.
            let deletions = try await api.feed("/v1/auth/deleted-accounts").decode(DeletedAccounts.self)
            #expect(deletions.accounts.map(\.userId) == [session.user.id])
            let later = try await api.feed("/v1/auth/deleted-accounts?since=2999-01-01T00:00:00Z")
                .decode(DeletedAccounts.self)
            #expect(later.accounts.isEmpty)
            #expect(try await api.feed("/v1/auth/deleted-accounts?since=yesterday").status == .badRequest)
            #expect(try await api.feed("/v1/auth/deleted-accounts?after=someone").status == .badRequest)
            // The next page starts after the last entry of the one before: that entry is not listed again.
            let last = try #require(deletions.accounts.last)
            let stamp = last.deletedAt.formatted(.iso8601)
            let next = try await api.feed(
                "/v1/auth/deleted-accounts?since=\(stamp)&after=\(last.userId.uuidString.lowercased())")
                .decode(DeletedAccounts.self)
            #expect(next.accounts.isEmpty)
            let sameSecond = try await api.feed("/v1/auth/deleted-accounts?since=\(stamp)")
                .decode(DeletedAccounts.self)
            #expect(sameSecond.accounts.map(\.userId) == [session.user.id])
            // The email is free again.
            _ = try await api.signUp(email: email)
        }
    }
}
