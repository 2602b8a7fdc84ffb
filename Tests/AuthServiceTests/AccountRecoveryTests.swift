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

/// Password reset and email verification, with mail delivered over SMTP to a real server and links followed from the
/// mails it stored.
@Suite struct AccountRecoveryTests {
    /// Request, read the mail, open the link (which changes nothing), confirm: the new password works, the old one and
    /// every earlier session do not, and the email counts as verified.
    @Test func aResetByMailReplacesThePasswordAndEndsEverySession() async throws {
        try await withMailApp { api, mail, _ in
            let email = AuthTestApp.uniqueEmail("forgetful")
            let first = try await api.signUp(email: email)
            let second = try #require(try await api.signIn(email: email).decode(AuthSession.self))
            #expect(try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
                .status == .accepted)
            let link = try await mail.link(to: email, subject: "Reset your FavoriteMe password")
            #expect(link.path == "/account/reset-password")

            for _ in 0..<2 {  // a mail scanner opens it first: the person still can
                let page = try await api.call(.get, link.pathAndQuery)
                #expect(page.status == .ok)
                #expect(page.headers[.contentType] == "text/html; charset=utf-8")
                #expect(page.headers[.cacheControl] == "no-store")
                #expect(String(buffer: page.body).contains("name=\"password\""))
            }
            #expect(try await api.signIn(email: email).status == .ok)  // nothing changed yet

            let done = try await api.postForm("/account/reset-password",
                                              ["token": link.token, "password": "a brand new passphrase"])
            #expect(done.status == .ok, "\(String(buffer: done.body))")
            #expect(try await api.signIn(email: email).status == .unauthorized)
            let signedIn = try await api.signIn(email: email, password: "a brand new passphrase")
            #expect(signedIn.status == .ok)
            #expect(try signedIn.decode(AuthSession.self).user.emailVerified)
            for session in [first, second] {
                #expect(try await api.refresh(session.refreshToken).status == .unauthorized)
                #expect(try await api.call(.get, "/v1/auth/me", token: session.accessToken).status == .unauthorized)
            }
            // The link worked once.
            let again = try await api.call(.post, "/v1/auth/password-reset/confirm",
                                           json: PasswordResetConfirmation(token: link.token, newPassword: "yet another one"))
            #expect(again.status == .badRequest)
            #expect(again.problem?.type == .invalidLinkToken)
        }
    }

    /// A used, expired, altered or borrowed token, or one for another purpose: each a 400 problem, and the account is
    /// as it was.
    @Test func brokenLinksAreRefusedAndChangeNothing() async throws {
        try await withMailApp { api, mail, database in
            let ana = AuthTestApp.uniqueEmail("ana"), bo = AuthTestApp.uniqueEmail("bo")
            let anaSession = try await api.signUp(email: ana)
            _ = try await api.signUp(email: bo)
            let anaVerification = try await mail.link(to: ana, subject: "Confirm your email for FavoriteMe").token
            for email in [ana, bo] {
                _ = try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
            }
            let anaToken = try await mail.link(to: ana, subject: "Reset your FavoriteMe password").token
            let boToken = try await mail.link(to: bo, subject: "Reset your FavoriteMe password").token

            var altered = Array(anaToken)
            altered[40] = altered[40] == "A" ? "B" : "A"
            // Bo's account id with Ana's secret: a token must open its own account only.
            var borrowed = Data(base64URLEncoded: anaToken)!
            borrowed.replaceSubrange(0..<16, with: Data(base64URLEncoded: boToken)!.prefix(16))
            for token in [String(altered), borrowed.base64URLEncodedString(), anaVerification, "", "short",
                          String(repeating: "%", count: 64)] {
                let refused = try await api.call(.post, "/v1/auth/password-reset/confirm",
                                                 json: PasswordResetConfirmation(token: token, newPassword: "hijacked at last"))
                #expect(refused.status == .badRequest, "\(token)")
                #expect(refused.problem?.type == .invalidLinkToken, "\(token)")
            }
            let weak = try await api.call(.post, "/v1/auth/password-reset/confirm",
                                          json: PasswordResetConfirmation(token: anaToken, newPassword: "short"))
            #expect(weak.status == .badRequest)
            #expect(weak.problem?.errors?.map(\.field) == ["newPassword"])

            let pool = database.makePool(size: 1)
            try await pool.query("UPDATE auth.link_tokens SET expires_at = now() - interval '1 second'")
            await pool.close()
            let expired = try await api.call(.post, "/v1/auth/password-reset/confirm",
                                             json: PasswordResetConfirmation(token: boToken, newPassword: "too late now"))
            #expect(expired.status == .badRequest)
            #expect(expired.problem?.type == .expiredLinkToken)
            let expiredPage = try await api.call(.get, "/account/reset-password?token=\(boToken)")
            #expect(expiredPage.status == .badRequest)
            #expect(String(buffer: expiredPage.body).contains("expired"))

            for email in [ana, bo] { #expect(try await api.signIn(email: email).status == .ok) }
            #expect(try await api.call(.get, "/v1/auth/me", token: anaSession.accessToken).status == .ok)
        }
    }

    /// Asked for an address with an account and for one without: the same status, body and headers (but the request
    /// id), and only the account's owner gets a mail.
    @Test func resetRequestsLookTheSameWhetherOrNotAnAccountExists() async throws {
        try await withMailApp { api, mail, database in
            let member = AuthTestApp.uniqueEmail("member")
            _ = try await api.signUp(email: member)
            let stranger = AuthTestApp.uniqueEmail("stranger")
            let answers = [
                try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: member)),
                try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: stranger)),
            ]
            #expect(answers[0].status == .accepted)
            #expect(answers[0].status == answers[1].status)
            #expect(answers[0].body == answers[1].body)
            let fields = answers.map { answer in
                answer.headers.filter { ![.init("X-Request-ID")!, .date].contains($0.name) }
                    .map { "\($0.name): \($0.value)" }.sorted()
            }
            #expect(fields[0] == fields[1])

            _ = try await mail.link(to: member, subject: "Reset your FavoriteMe password")
            let pool = database.makePool(size: 1)
            let waiting = try await eventually({
                try await pool.query("SELECT count(*) FROM auth.mail_outbox").scalar(Int.self)
            }, until: { $0 == 0 })
            await pool.close()
            #expect(waiting == 0)
            #expect(!mail.server.mails().contains { $0.header("To")?.contains(stranger) == true })
        }
    }

    @Test func mailRequestsAreLimitedPerAddressAndPerClient() async throws {
        let limits = ["MAIL_REQUESTS_PER_EMAIL": "2", "MAIL_REQUESTS_PER_CLIENT": "4"]
        try await withMailApp(environment: limits) { api, _, _ in
            let email = AuthTestApp.uniqueEmail()
            for _ in 0..<2 {
                #expect(try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
                    .status == .accepted)
            }
            let refused = try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
            #expect(refused.status == .tooManyRequests)
            #expect(refused.problem?.type == .mailThrottled)
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 > 0)
            // Other addresses from the same client: within the client's allowance (a refused request counts nothing,
            // so 2 counted so far), until it is spent.
            for _ in 0..<2 {
                #expect(try await api.call(.post, "/v1/auth/password-reset",
                                           json: PasswordResetRequest(email: AuthTestApp.uniqueEmail())).status == .accepted)
            }
            let flooding = try await api.call(.post, "/v1/auth/password-reset",
                                              json: PasswordResetRequest(email: AuthTestApp.uniqueEmail()))
            #expect(flooding.status == .tooManyRequests)
            #expect(flooding.problem?.type == .mailThrottled)
        }
    }

    /// The mail server is down when the reset is asked for: the answer is the same, and the mail arrives once the
    /// server is back.
    @Test func aMailServerOutageDelaysMailAndLosesNone() async throws {
        let server = try await MailServer.start()
        let port = server.port
        server.stop()
        try await AuthTestApp.withApp(environment: Self.environment(port: port)) { api, database in
            let email = AuthTestApp.uniqueEmail("patient")
            _ = try await api.signUp(email: email)
            #expect(try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
                .status == .accepted)
            let pool = database.makePool(size: 1)
            let failedAttempts = try await eventually({
                try await pool.query("SELECT coalesce(min(attempts), 0) FROM auth.mail_outbox")
                    .scalar(Int.self)
            }, until: { $0 >= 2 })
            await pool.close()
            #expect(failedAttempts >= 2)
            let restarted = try await MailServer.start(port: port)
            defer { restarted.stop() }
            let inbox = Inbox(server: restarted)
            // Both mails queued during the outage arrive: the sign-up's and the reset's.
            _ = try await inbox.link(to: email, subject: "Confirm your email for FavoriteMe")
            let link = try await inbox.link(to: email, subject: "Reset your FavoriteMe password")
            #expect(try await api.call(.post, "/v1/auth/password-reset/confirm",
                                       json: PasswordResetConfirmation(token: link.token, newPassword: "worth the wait"))
                .status == .noContent)
        }
    }

    /// A link already delivered keeps working while the mail that would replace it cannot be sent; once that mail
    /// arrives, only its link works.
    @Test func aDeliveredLinkWorksUntilItsSuccessorIsDelivered() async throws {
        let server = try await MailServer.start()
        let port = server.port
        try await AuthTestApp.withApp(environment: Self.environment(port: port)) { api, database in
            let email = AuthTestApp.uniqueEmail("twice")
            _ = try await api.signUp(email: email)
            _ = try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
            let first = try await Inbox(server: server).link(to: email, subject: "Reset your FavoriteMe password")
            // Delivered as the outbox knows it too: on a busy machine the server's last reply can come after the mail
            // is in the inbox, and a mail not known as delivered is replaced by the next request's.
            let pool = database.makePool(size: 1)
            _ = try await eventually({
                try await pool.query("SELECT count(*) FROM auth.mail_outbox WHERE purpose = 'password-reset'")
                    .scalar(Int.self)
            }, until: { $0 == 0 })
            server.stop()

            _ = try await api.call(.post, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
            _ = try await eventually({
                try await pool.query("""
                    SELECT coalesce(max(attempts), 0) FROM auth.mail_outbox WHERE purpose = 'password-reset'
                    """).scalar(Int.self)
            }, until: { $0 >= 2 })
            await pool.close()
            let kept = try await api.call(.get, first.pathAndQuery).status
            #expect(kept == .ok, "the first link answered \(kept)")  // the failed attempts left it be

            let restarted = try await MailServer.start(port: port)
            defer { restarted.stop() }
            let second = try await Inbox(server: restarted).link(to: email, subject: "Reset your FavoriteMe password")
            #expect(second.token != first.token)
            #expect(try await api.call(.get, first.pathAndQuery).status == .badRequest)
            #expect(try await api.call(.post, "/v1/auth/password-reset/confirm",
                                       json: PasswordResetConfirmation(token: second.token, newPassword: "the second one"))
                .status == .noContent)
        }
    }

    /// A new account reads unverified in `/me` and in its access token; after its link, verified in both (a new token).
    @Test func followingTheVerificationLinkVerifiesTheEmail() async throws {
        try await withMailApp { api, mail, _ in
            let email = AuthTestApp.uniqueEmail("new")
            let session = try await api.signUp(email: email)
            #expect(!session.user.emailVerified)
            #expect(try Self.claims(of: session.accessToken)["email_verified"] as? Bool == false)
            let firstLink = try await mail.link(to: email, subject: "Confirm your email for FavoriteMe")
            // A resend replaces the first link.
            #expect(try await api.call(.post, "/v1/auth/email-verification", token: session.accessToken)
                .status == .accepted)
            let link = try await mail.link(to: email, subject: "Confirm your email for FavoriteMe", index: 1)
            #expect(link.token != firstLink.token)
            #expect(link.path == "/account/verify-email")
            #expect(try await api.call(.get, link.pathAndQuery).status == .ok)
            let me = try await api.call(.get, "/v1/auth/me", token: session.accessToken).decode(UserProfile.self)
            #expect(!me.emailVerified)  // opening the page changed nothing

            let stale = try await api.postForm("/account/verify-email", ["token": firstLink.token])
            #expect(stale.status == .badRequest)
            let done = try await api.postForm("/account/verify-email", ["token": link.token])
            #expect(done.status == .ok)
            #expect(try await api.call(.get, "/v1/auth/me", token: session.accessToken).decode(UserProfile.self)
                .emailVerified)
            let refreshed = try await api.refresh(session.refreshToken).decode(AuthSession.self)
            #expect(try Self.claims(of: refreshed.accessToken)["email_verified"] as? Bool == true)
            let resend = try await api.call(.post, "/v1/auth/email-verification", token: refreshed.accessToken)
            #expect(resend.status == .conflict)
            #expect(resend.problem?.type == .emailAlreadyVerified)
        }
    }

    // MARK: Harness

    static func environment(port: Int) -> [String: String] {
        ["SMTP_PORT": String(port), "MAIL_POLL_MS": "50", "MAIL_RETRY_MAX_SECONDS": "1",
         "PUBLIC_BASE_URL": "https://favoriteme.example"]
    }

    func withMailApp(
        environment: [String: String] = [:],
        _ test: @escaping @Sendable (AuthClient, Inbox, TestDatabase) async throws -> Void
    ) async throws {
        let server = try await MailServer.start()
        defer { server.stop() }
        try await AuthTestApp.withApp(environment: Self.environment(port: server.port).merging(environment) { $1 }) {
            api, database in
            try await test(api, Inbox(server: server), database)
        }
    }

    /// The claims of a JWT, unverified (the token came straight from the service).
    static func claims(of token: String) throws -> [String: Any] {
        let payload = try #require(Data(base64URLEncoded: String(token.split(separator: ".")[1])))
        return try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
    }
}

/// The mails a test's server received, and the links in them.
struct Inbox: Sendable {
    let server: MailServer

    struct Link {
        var url: URL
        var path: String { url.path }
        var token: String {
            URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "token" }?.value ?? ""
        }
        /// What to request of the app itself (the link's host is the public one).
        var pathAndQuery: String { url.path + "?" + (url.query ?? "") }
    }

    /// The link of the `index`th mail to `email` with `subject`, once it has arrived.
    func link(to email: String, subject: String, index: Int = 0) async throws -> Link {
        let matching = try await eventually({
            server.mails().filter { $0.header("To") == email && $0.header("Subject") == subject }
        }, until: { $0.count > index })
        let mail = try #require(matching.count > index ? matching[index] : nil, "no mail \(subject) to \(email)")
        let url = try #require(mail.link, "no link in \(mail.raw)")
        #expect(url.absoluteString.hasPrefix("https://favoriteme.example/account/"))
        return Link(url: url)
    }
}

extension AuthClient {
    /// POSTs `fields` as an HTML form does.
    func postForm(_ path: String, _ fields: [String: String]) async throws -> TestResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&")
        return try await client.execute(uri: path, method: .post,
                                        headers: [.contentType: "application/x-www-form-urlencoded"],
                                        body: ByteBuffer(string: body)) { $0 }
    }
}
