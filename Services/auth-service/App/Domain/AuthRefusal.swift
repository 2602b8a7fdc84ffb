import Contracts
import Foundation

/// Why a use case refuses a request; each is a problem of its own for clients (see AuthProblems.swift).
enum AuthRefusal: Error, Equatable {
    /// Unknown email or wrong password: one refusal for both, so that no answer tells which accounts exist.
    case invalidCredentials
    /// Another account has the email (a sign-up retry is answered as the first one was, not with this).
    case emailTaken
    /// The refresh token (of a refresh, or of a logout without a usable access token) names no live session: unknown,
    /// expired, ended, or a retired copy. Only signing in helps.
    case invalidRefreshToken
    /// A rotated-out refresh token came back after its grace window: it may be stolen, so its session was ended.
    case refreshTokenReused
    /// The password a signed-in user re-confirmed with is wrong: a stolen access token alone changes nothing.
    case passwordNotConfirmed
    /// Too many failed password checks for the email, the address or the device: wait `retryAfter` seconds.
    case signInThrottled(retryAfter: TimeInterval)
    /// The user has no live session with this id (another user's session counts as none).
    case noSuchSession
    /// A verified token's account no longer exists: deleted in the instant before its revocation got here.
    case accountGone
    /// The experience has no categories, so a default category cannot name one.
    case noCategories(in: ExperienceID)
    /// The default category is none of the experience's categories, as the catalog lists them now.
    case unknownCategory(String, in: ExperienceID)
    /// Fields a domain check refused (preferences that are too many, too long, or unsafe).
    case invalidFields([FieldError])
    /// Too many mails asked for this address or from this client: wait `retryAfter` seconds.
    case mailThrottled(retryAfter: TimeInterval)
    /// A link's token that is not a live one of ours: mistyped, used, replaced by a newer link, or for another purpose.
    case invalidLinkToken
    /// A link's token that was ours but has expired.
    case expiredLinkToken
    /// The account's email is verified already: no verification mail to send.
    case emailAlreadyVerified
    /// Too many sign-ups from this client (an IPv6 /64) this hour: wait `retryAfter` seconds.
    case signUpThrottled(retryAfter: TimeInterval)
    /// As many passwords wait to be hashed or checked as may: try again in a moment.
    case busy
}
