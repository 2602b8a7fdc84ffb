import Contracts
import Foundation
import HTTPTypes
import ServiceKit

/// A password check under the sign-in throttle (``ThrottleStore/beginAttempt(_:now:)``): counted as a failure before
/// it runs and taken back when the password was right; refused with 429 while any of its keys is blocked, before any
/// password is looked at. Re-confirming a password counts against the same keys as signing in: a stolen access token
/// must not become a guessing oracle.
struct PasswordCheck: Sendable {
    let accounts: AccountStore
    let throttle: ThrottleStore
    let hasher: PasswordHasher
    let counters: AuthCounters

    /// The account of `email` when `password` is its password, else nil (the failure stays counted). An unknown email
    /// is verified against a decoy hash: the same time as a wrong password.
    func account(_ email: EmailAddress, password: String, clientAddress: String, now: Date) async throws -> Account? {
        try await throttled(email, clientAddress: clientAddress, now: now) {
            let account = try await accounts.find(email: email)
            return try await hasher.verify(password, against: account?.passwordHash) ? account : nil
        }
    }

    /// Checks the password of a signed-in user who re-confirms it (deleting the account, changing the password).
    func confirm(_ password: String, of account: Account, clientAddress: String) async throws {
        let email = EmailAddress(normalizing: account.email)!
        let confirmed = try await throttled(email, clientAddress: clientAddress, now: Date()) {
            try await hasher.verify(password, against: account.passwordHash) ? account : nil
        }
        guard confirmed != nil else {
            throw ServiceProblem(.forbidden, .passwordConfirmationFailed, "The password is not correct.")
        }
    }

    /// Runs `check` as one counted attempt; its failure (nil) stays counted, its success is refunded.
    private func throttled(_ email: EmailAddress, clientAddress: String, now: Date,
                           check: () async throws -> Account?) async throws -> Account? {
        let keys = ThrottleKey.forSignIn(email: email, clientAddress: clientAddress)
        let attempt: ThrottleStore.Attempt
        switch try await throttle.beginAttempt(keys, now: now) {
        case .counted(let counted):
            attempt = counted
        case .blocked(let wait):
            counters.count(.signIn, "throttled")
            let seconds = Int(wait.rounded(.up))
            throw ServiceProblem(.tooManyRequests, .signInThrottled,
                                 "Too many failed attempts; try again in \(seconds) seconds.",
                                 headers: [.retryAfter: String(seconds)])
        }
        guard let account = try await check() else { return nil }
        try await throttle.attemptSucceeded(attempt, keys: keys, now: now)
        return account
    }
}
