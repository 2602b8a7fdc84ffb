import Contracts
import Foundation

/// A password check under the sign-in throttle (``ThrottleStore/beginAttempt(_:now:)``): counted as a failure before
/// it runs and taken back when the password was right; refused with 429 while any of its keys is blocked, before any
/// password is looked at. Re-confirming a password counts against the same keys as signing in: a stolen access token
/// must not become a guessing oracle.
struct PasswordCheck: Sendable {
    let accounts: AccountStore
    let throttle: ThrottleStore
    let hasher: PasswordHasher
    let devices: KnownDevices
    let counters: AuthCounters

    /// A password that was right, and whether it came from a device that signed in to the account before.
    struct Passed: Sendable {
        var account: Account
        var fromKnownDevice: Bool
    }

    /// The account of `email` when `password` is its password, else nil (the failure stays counted). An unknown email
    /// is verified against a decoy hash: the same time as a wrong password. A `deviceCredential` given to this
    /// account's device earlier puts the attempt under that device's own throttle (see ``ThrottleKey/forSignIn``).
    func account(_ email: EmailAddress, password: String, clientAddress: String, deviceCredential: String?,
                 now: Date) async throws -> Passed? {
        let account = try await accounts.find(email: email)
        var knownDevice: String?
        if let deviceCredential, let account, try await devices.owner(of: deviceCredential) == account.id {
            knownDevice = KnownDevices.throttleName(of: deviceCredential)
        }
        let keys = ThrottleKey.forSignIn(email: email, clientAddress: clientAddress, knownDevice: knownDevice)
        let passed = try await throttled(keys, now: now) {
            try await hasher.verify(password, against: account?.passwordHash) ? account : nil
        }
        return passed.map { Passed(account: $0, fromKnownDevice: knownDevice != nil) }
    }

    /// Checks the password of a signed-in user who re-confirms it (deleting the account, changing the password).
    func confirm(_ password: String, of account: Account, clientAddress: String) async throws {
        let email = EmailAddress(stored: account.email)
        let keys = ThrottleKey.forSignIn(email: email, clientAddress: clientAddress)
        let confirmed = try await throttled(keys, now: Date()) {
            try await hasher.verify(password, against: account.passwordHash) ? account : nil
        }
        guard confirmed != nil else { throw AuthRefusal.passwordNotConfirmed }
    }

    /// Runs `check` as one counted attempt; its failure (nil) stays counted, its success is refunded.
    private func throttled(_ keys: [ThrottleKey], now: Date,
                           check: () async throws -> Account?) async throws -> Account? {
        let attempt: ThrottleStore.Attempt
        switch try await throttle.beginAttempt(keys, now: now) {
        case .counted(let counted):
            attempt = counted
        case .blocked(let wait):
            counters.count(.signIn, "throttled")
            throw AuthRefusal.signInThrottled(retryAfter: wait)
        }
        guard let account = try await check() else { return nil }
        try await throttle.attemptSucceeded(attempt, keys: keys, now: now)
        return account
    }
}
