import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import Testing

extension EndToEnd {
    /// Account recovery as a person meets it: through the gateway, with the mails auth-service sent to the stack's
    /// real SMTP server, read from where that server stores them.
    @Suite struct AccountRecoveryTests {
        @Test func aForgottenPasswordIsResetFromTheMailedLink() async throws {
            let stack = try StackUnderTest.required()
            let email = uniqueEmail("reset")
            let anonymous = StackClient(stack.gateway)
            let signUp = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: email, password: accountPassword, experience: "mobiles"))
            let session = try signUp.decode(AuthSession.self)
            #expect(!session.user.emailVerified)
            let asked = try await anonymous.send(.POST, "/v1/auth/password-reset", json: PasswordResetRequest(email: email))
            #expect(asked.status == .accepted)
            #expect(asked.headers.first(name: "Cache-Control") == "no-store")

            let link = try await Self.link(in: stack, to: email, subject: "Reset your FavoriteMe password")
            #expect(link.absoluteString.hasPrefix(stack.gateway.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                + "/account/reset-password?token="))
            let path = link.path + "?" + (link.query ?? "")
            for _ in 0..<2 {  // opened by a mail scanner, then by the person: both get the form
                let page = try await anonymous.get(path)
                #expect(page.status == .ok)
                #expect(String(decoding: page.body, as: UTF8.self).contains("<form method=\"post\""))
            }
            let token = try #require(URLComponents(url: link, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "token" }?.value)
            let newPassword = "a fresh start, remembered"
            let form = "token=\(token)&password=\(newPassword.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            let confirmed = try await anonymous.send(.POST, "/account/reset-password", body: Data(form.utf8),
                                                     headers: [("Content-Type", "application/x-www-form-urlencoded")])
            #expect(confirmed.status == .ok)

            let oldPassword = try await anonymous.send(.POST, "/v1/auth/login",
                                                       json: SignInRequest(email: email, password: accountPassword))
            #expect(oldPassword.status == .unauthorized)
            let refreshed = try await anonymous.send(.POST, "/v1/auth/refresh",
                                                     json: RefreshRequest(refreshToken: session.refreshToken))
            #expect(refreshed.status == .unauthorized)
            let signedIn = try await anonymous.send(.POST, "/v1/auth/login",
                                                    json: SignInRequest(email: email, password: newPassword))
            #expect(signedIn.status == .ok)
            #expect(try signedIn.decode(AuthSession.self).user.emailVerified)  // the mail reached its owner
            let reused = try await anonymous.send(.POST, "/v1/auth/password-reset/confirm",
                                                  json: PasswordResetConfirmation(token: token, newPassword: "once more"))
            #expect(reused.status == .badRequest)
            #expect(reused.problem?.type == .invalidLinkToken)
        }

        @Test func theVerificationLinkVerifiesTheEmailInTheProfileAndTheNextToken() async throws {
            let stack = try StackUnderTest.required()
            let email = uniqueEmail("verify")
            let anonymous = StackClient(stack.gateway)
            let session = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: email, password: accountPassword, experience: "mobiles")).decode(AuthSession.self)
            let link = try await Self.link(in: stack, to: email, subject: "Confirm your email for FavoriteMe")
            let token = try #require(URLComponents(url: link, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "token" }?.value)
            #expect(try await anonymous.get(link.path + "?" + (link.query ?? "")).status == .ok)
            let app = anonymous.with(token: session.accessToken)
            #expect(try await app.get("/v1/auth/me").decode(UserProfile.self).emailVerified == false)
            #expect(try await anonymous.send(.POST, "/v1/auth/email-verification/confirm",
                                             json: EmailVerificationConfirmation(token: token)).status == .noContent)
            #expect(try await app.get("/v1/auth/me").decode(UserProfile.self).emailVerified)
            let refreshed = try await anonymous.send(.POST, "/v1/auth/refresh",
                                                     json: RefreshRequest(refreshToken: session.refreshToken))
            #expect(try refreshed.decode(AuthSession.self).user.emailVerified)
        }

        /// The link of the newest mail to `email` with `subject`, once the stack's mail server has it.
        static func link(in stack: StackUnderTest, to email: String, subject: String) async throws -> URL {
            let mails = try await eventually({
                ReceivedMail.all(in: stack.inbox).filter { $0.header("To") == email && $0.header("Subject") == subject }
            }, until: { !$0.isEmpty })
            let mail = try #require(mails.last, "no mail \"\(subject)\" to \(email) in \(stack.inbox.path)")
            return try #require(mail.link, "no link in \(mail.raw)")
        }
    }
}
