import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit

/// The pages a mailed link opens in a browser. Opening one (GET) changes nothing, so a mail scanner that follows every
/// link uses nothing up; the page's button POSTs the token, and only that acts. Plain HTML forms, no script: they work
/// in any mail app's browser. Apps that claim these paths as universal links take the token and call the JSON API
/// instead.
struct LinkPages: Sendable {
    let followLink: FollowLink

    func register(on router: Router<AppRequestContext>) {
        let pages = router.group("account")
        pages.get("reset-password", use: resetPasswordPage)
        pages.post("reset-password", use: resetPassword)
        pages.get("verify-email", use: verifyEmailPage)
        pages.post("verify-email", use: verifyEmail)
    }

    @Sendable func resetPasswordPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let token = request.uri.queryParameters.get("token") ?? ""
        return await page(checking: token, for: .passwordReset) { Self.resetForm(token: token, message: nil) }
    }

    @Sendable func resetPassword(_ request: Request, context: AppRequestContext) async throws -> Response {
        let form = try await Self.form(of: request, context: context)
        let token = form["token"] ?? ""
        do {
            try await followLink.resetPassword(token: token, to: form["password"] ?? "")
            return HTMLPage(title: "Password changed", body: """
                <p>Your password is changed. Sign in with it in the app.</p>
                <p>Every device that was signed in has been signed out.</p>
                """).response()
        } catch AuthRefusal.invalidFields(let errors) {
            let message = errors.map(\.message).joined(separator: "; ")
            return Self.resetForm(token: token, message: "The new password \(message).").response(status: .badRequest)
        } catch let refusal as AuthRefusal {
            return Self.refusalPage(refusal)
        }
    }

    @Sendable func verifyEmailPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let token = request.uri.queryParameters.get("token") ?? ""
        return await page(checking: token, for: .emailVerification) {
            HTMLPage(title: "Confirm your email", body: """
                <p>Confirm that this address belongs to your FavoriteMe account.</p>
                <form method="post" action="verify-email">
                  <input type="hidden" name="token" value="\(HTMLPage.escape(token))">
                  <button type="submit">Confirm my email</button>
                </form>
                """)
        }
    }

    @Sendable func verifyEmail(_ request: Request, context: AppRequestContext) async throws -> Response {
        let form = try await Self.form(of: request, context: context)
        do {
            try await followLink.verifyEmail(token: form["token"] ?? "")
            return HTMLPage(title: "Email confirmed", body: "<p>Thank you: your email is confirmed.</p>").response()
        } catch let refusal as AuthRefusal {
            return Self.refusalPage(refusal)
        }
    }

    // MARK: Pages

    /// `page()` when `token` is a live link for `purpose`, else a page saying what is wrong with it. Reads only.
    private func page(checking token: String, for purpose: LinkPurpose, _ page: () -> HTMLPage) async -> Response {
        do {
            _ = try await followLink.check(token, for: purpose)
            return page().response()
        } catch let refusal as AuthRefusal {
            return Self.refusalPage(refusal)
        } catch {
            return HTMLPage(title: "Try again later", body: "<p>We could not check this link just now; try again in a "
                                + "minute.</p>").response(status: .serviceUnavailable)
        }
    }

    private static func resetForm(token: String, message: String?) -> HTMLPage {
        HTMLPage(title: "Choose a new password", body: """
            \(message.map { "<p class=\"error\">\(HTMLPage.escape($0))</p>" } ?? "")
            <form method="post" action="reset-password">
              <input type="hidden" name="token" value="\(HTMLPage.escape(token))">
              <label for="password">New password (at least \(PasswordPolicy.minimumLength) characters)</label>
              <input id="password" type="password" name="password" autocomplete="new-password" required
                     minlength="\(PasswordPolicy.minimumLength)" maxlength="\(PasswordPolicy.maximumLength)">
              <button type="submit">Set the new password</button>
            </form>
            """)
    }

    private static func refusalPage(_ refusal: AuthRefusal) -> Response {
        let problem = refusal.problem
        return HTMLPage(title: "This link cannot be used", body: """
            <p>\(HTMLPage.escape(problem.detail))</p>
            <p>Ask for a new mail from the app.</p>
            """).response(status: problem.status)
    }

    /// The fields of an `application/x-www-form-urlencoded` body (what an HTML form posts).
    private static func form(of request: Request, context: AppRequestContext) async throws -> [String: String] {
        let mediaType = request.headers[.contentType]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/x-www-form-urlencoded" else {
            throw ServiceProblem(.unsupportedMediaType, .unsupportedMediaType,
                                 "Send the form as application/x-www-form-urlencoded.")
        }
        let buffer = try await request.body.collect(upTo: 16 * 1024)
        do {
            return try URLEncodedFormDecoder().decode([String: String].self, from: String(buffer: buffer))
        } catch {
            throw ServiceProblem(.badRequest, .malformedRequest, "The form could not be read.")
        }
    }
}

/// A small self-contained HTML page: no script, no outside resources, never cached, never framed, and no `Referer`
/// carrying the link's token to anyone.
struct HTMLPage: Sendable {
    var title: String
    var body: String

    func response(status: HTTPResponse.Status = .ok) -> Response {
        let html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(Self.escape(title)) · FavoriteMe</title>
            <style>
            body { font: 16px/1.5 system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; }
            label, input, button { display: block; width: 100%; box-sizing: border-box; margin: .5rem 0; }
            input, button { font: inherit; padding: .6rem; }
            .error { color: #b00020; }
            </style>
            </head>
            <body>
            <h1>\(Self.escape(title))</h1>
            \(body)
            </body>
            </html>
            """
        let headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8",
            .cacheControl: "no-store",
            .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                + "frame-ancestors 'none'; base-uri 'none'",
            .referrerPolicy: "no-referrer",
            .xContentTypeOptions: "nosniff",
        ]
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

extension HTTPField.Name {
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
