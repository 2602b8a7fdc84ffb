import Contracts
import Foundation

/// What a new password must be (NIST SP 800-63B): long enough, not absurdly long, not one of the passwords every
/// attacker tries first, not the email. No composition rules: they make passwords harder to remember, not to guess.
enum PasswordPolicy {
    static let minimumLength = 8
    /// Far above what anyone types; bounds the work a single request can ask of us.
    static let maximumLength = 256
    /// The same bound in UTF-8 bytes, checked before anything else looks at the password (four a character).
    static let maximumBytes = 1024

    /// Why a password someone types to sign in cannot be one of ours, or nil: its bytes are checked before it is
    /// counted, normalised or hashed.
    static func signInProblem(with password: String) -> String? {
        if let problem = UserText.sizeProblem(of: password, maximumBytes: maximumBytes) { return problem }
        return password.isEmpty || password.count > maximumLength ? "must be 1 to \(maximumLength) characters" : nil
    }

    /// Why `password` cannot be used, or nil when it can. Lengths count bytes first, then characters as a person
    /// sees them.
    static func problem(with password: String, email: EmailAddress?) -> String? {
        if let problem = UserText.sizeProblem(of: password, maximumBytes: maximumBytes) { return problem }
        let length = password.count
        if length < minimumLength { return "must be at least \(minimumLength) characters" }
        if length > maximumLength { return "must be at most \(maximumLength) characters" }
        let folded = password.lowercased()
        if CommonPasswords.all.contains(folded) { return "is one of the most common passwords; choose another" }
        if let email, folded == email.value || folded == email.value.split(separator: "@").first.map(String.init) {
            return "must not be your email address"
        }
        if Set(password).count == 1 { return "must not repeat a single character" }
        return nil
    }
}
