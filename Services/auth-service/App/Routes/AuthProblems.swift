import Contracts
import HTTPTypes
import ServiceKit

/// auth-service's refusals as clients get them: its one place that maps errors to problems.
extension AuthRefusal: ProblemConvertible {
    var problem: ServiceProblem {
        switch self {
        case .invalidCredentials:
            ServiceProblem(.unauthorized, .invalidCredentials, "The email or the password is not correct.")
        case .emailTaken:
            ServiceProblem(.conflict, .emailTaken, "An account with this email already exists; sign in instead.")
        case .invalidRefreshToken:
            ServiceProblem(.unauthorized, .invalidRefreshToken,
                           "The refresh token is not valid or its session has ended; sign in again.")
        case .refreshTokenReused:
            ServiceProblem(.unauthorized, .refreshTokenReused,
                           "This refresh token was already used, so the session was ended; sign in again.")
        case .passwordNotConfirmed:
            ServiceProblem(.forbidden, .passwordConfirmationFailed, "The password is not correct.")
        case .signInThrottled(let wait):
            throttled(seconds: Int(wait.rounded(.up)))
        case .noSuchSession:
            ServiceProblem(.notFound, .notFound, "You have no live session with this id.")
        case .accountGone:
            ServiceProblem(.unauthorized, .invalidToken, "The account of this token no longer exists.",
                           headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
        case .noCategories(let experience):
            ServiceProblem.validation([FieldError(field: Self.defaultCategoryField,
                                                  message: "\(experience) has no categories")])
        case .unknownCategory(let category, let experience):
            ServiceProblem.validation([FieldError(
                field: Self.defaultCategoryField,
                message: "\"\(category.prefix(80))\" is not one of GET /v1/catalog/\(experience)/categories")])
        case .invalidFields(let errors):
            ServiceProblem.validation(errors)
        case .mailThrottled(let wait):
            ServiceProblem(.tooManyRequests, .mailThrottled,
                           "Too many mails asked for; try again in \(Int(wait.rounded(.up))) seconds.",
                           headers: [.retryAfter: String(Int(wait.rounded(.up)))])
        case .invalidLinkToken:
            ServiceProblem(.badRequest, .invalidLinkToken,
                           "This link is not valid: it was used already, replaced by a newer one, or changed. "
                               + "Ask for a new mail.")
        case .expiredLinkToken:
            ServiceProblem(.badRequest, .expiredLinkToken, "This link has expired; ask for a new mail.")
        case .emailAlreadyVerified:
            ServiceProblem(.conflict, .emailAlreadyVerified, "Your email is verified already.")
        case .signUpThrottled(let wait):
            ServiceProblem(.tooManyRequests, .signUpThrottled,
                           "Too many sign-ups from this network; try again in \(Int(wait.rounded(.up))) seconds.",
                           headers: [.retryAfter: String(Int(wait.rounded(.up)))])
        case .busy:
            ServiceProblem(.serviceUnavailable, .serviceBusy,
                           "Too many passwords are being checked right now; try again in a second.",
                           headers: [.retryAfter: "1"])
        }
    }

    private func throttled(seconds: Int) -> ServiceProblem {
        ServiceProblem(.tooManyRequests, .signInThrottled, "Too many failed attempts; try again in \(seconds) seconds.",
                       headers: [.retryAfter: String(seconds)])
    }

    private static let defaultCategoryField = "preferences.\(Preferences.defaultCategoryKey)"
}
