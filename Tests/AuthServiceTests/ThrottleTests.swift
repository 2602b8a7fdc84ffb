@testable import AuthService
import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import Postgres
import TestSupport
import Testing

@Suite struct ThrottleTests {
    static let realIP = HTTPField.Name("X-Real-IP")!

    static func fail(_ api: AuthClient, email: String, times: Int, from address: String) async throws {
        for _ in 0..<times {
            let response = try await api.signIn(email: email, password: "wrong guess", headers: [realIP: address])
            #expect(response.status == .unauthorized)
        }
    }

    @Test func repeatedFailuresAreThrottledEvenWithTheRightPassword() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            try await Self.fail(api, email: email, times: ThrottlePolicy.accountFromAddress.allowance,
                                from: "203.0.113.7")
            // The next failure crosses the allowance and starts a block.
            _ = try await api.signIn(email: email, password: "wrong guess", headers: [Self.realIP: "203.0.113.7"])
            let blocked = try await api.signIn(email: email, headers: [Self.realIP: "203.0.113.7"])
            #expect(blocked.status == .tooManyRequests)
            #expect(blocked.problem?.type == .signInThrottled)
            let retryAfter = try #require(blocked.headers[.retryAfter].flatMap(Int.init))
            #expect((1...Int(ThrottlePolicy.accountFromAddress.firstBlock)).contains(retryAfter))
            // An unknown email is throttled the same way, so a 429 reveals nothing about which accounts exist.
            let stranger = AuthTestApp.uniqueEmail()
            try await Self.fail(api, email: stranger, times: ThrottlePolicy.accountFromAddress.allowance + 1,
                                from: "203.0.113.8")
            #expect(try await api.signIn(email: stranger, headers: [Self.realIP: "203.0.113.8"]).status
                    == .tooManyRequests)
        }
    }

    /// Guesses sent all at once are counted before their passwords are checked: no more get an answer than one after
    /// another would.
    @Test func parallelGuessesGetNoMoreTriesThanSequentialOnes() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            let guesses = 12
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<guesses {
                    group.addTask {
                        try await api.signIn(email: email, password: "wrong guess", headers: [Self.realIP: "203.0.113.30"])
                            .status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The allowance, and the one guess that crossed it and started the block.
            #expect(statuses.filter { $0 == .unauthorized }.count == ThrottlePolicy.accountFromAddress.allowance + 1)
            #expect(statuses.filter { $0 == .tooManyRequests }.count
                    == guesses - ThrottlePolicy.accountFromAddress.allowance - 1)
        }
    }

    /// The attacker's failures block the attacker, not the account's owner signing in from elsewhere.
    @Test func anAttackerCannotLockTheOwnerOut() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            try await Self.fail(api, email: email, times: ThrottlePolicy.accountFromAddress.allowance + 1,
                                from: "198.51.100.66")
            #expect(try await api.signIn(email: email, headers: [Self.realIP: "198.51.100.66"]).status
                    == .tooManyRequests)
            #expect(try await api.signIn(email: email, headers: [Self.realIP: "192.0.2.10"]).status == .ok)
        }
    }

    /// Behind a carrier's NAT: strangers fail 50 sign-ins from the phone's address, for other accounts and for this
    /// one. The phone that signed in to the account before (its device credential) signs in at once; a device that
    /// never did, from the same address with the right password, is still slowed.
    @Test func aKnownDeviceIsNotLockedOutByStrangersOnItsAddress() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let signedUp = try await api.signUp(email: email)
            let credential = try #require(signedUp.deviceCredential)
            let shared = "198.51.100.200"
            for attempt in 0..<50 {
                let target = attempt % 10 == 0 ? email : AuthTestApp.uniqueEmail()
                let response = try await api.signIn(email: target, password: "wrong guess",
                                                    headers: [Self.realIP: shared])
                #expect([.unauthorized, .tooManyRequests].contains(response.status))
            }
            let known = try await api.signIn(email: email, deviceCredential: credential, headers: [Self.realIP: shared])
            #expect(known.status == .ok)
            #expect(try known.decode(AuthSession.self).deviceCredential == nil)  // it has one already
            let unknown = try await api.signIn(email: email, headers: [Self.realIP: shared])
            #expect(unknown.status == .tooManyRequests)
            #expect(unknown.problem?.type == .signInThrottled)
            // Another account's credential, or a made-up one, is not a way around the address's block.
            let other = try #require(try await api.signUp().deviceCredential)
            #expect(try await api.signIn(email: email, deviceCredential: other, headers: [Self.realIP: shared]).status
                    == .tooManyRequests)
            #expect(try await api.signIn(email: email, deviceCredential: String(repeating: "A", count: 43),
                                         headers: [Self.realIP: shared]).status == .tooManyRequests)
        }
    }

    /// A stolen device credential guesses no faster than one person mistyping: its own allowance, then a block of
    /// its own, which leaves the owner's other devices alone.
    @Test func aKnownDeviceGuessingIsThrottledOnItsOwn() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            let credential = try #require(try await api.signUp(email: email).deviceCredential)
            for _ in 0..<ThrottlePolicy.knownDevice.allowance + 1 {
                let response = try await api.signIn(email: email, password: "wrong guess", deviceCredential: credential,
                                                    headers: [Self.realIP: "203.0.113.77"])
                #expect(response.status == .unauthorized)
            }
            let blocked = try await api.signIn(email: email, deviceCredential: credential,
                                               headers: [Self.realIP: "203.0.113.77"])
            #expect(blocked.status == .tooManyRequests)
            // The same address without the credential has failed nothing: its own keys are clean.
            let fresh = try await api.signIn(email: email, headers: [Self.realIP: "203.0.113.77"])
            #expect(fresh.status == .ok)
            #expect(try fresh.decode(AuthSession.self).deviceCredential != nil)  // a device new to the account
        }
    }

    /// When the peer is not a trusted proxy, a client-chosen `X-Real-IP` is ignored: it cannot reset its counter by
    /// claiming a new address each time.
    @Test func aSpoofedAddressHeaderDoesNotResetTheCounter() async throws {
        try await AuthTestApp.withApp(environment: ["TRUSTED_PROXIES": "10.0.0.0/8"]) { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            for attempt in 0...ThrottlePolicy.accountFromAddress.allowance {
                _ = try await api.signIn(email: email, password: "wrong guess",
                                         headers: [Self.realIP: "203.0.113.\(attempt + 1)"])
            }
            let response = try await api.signIn(email: email, headers: [Self.realIP: "203.0.113.200"])
            #expect(response.status == .tooManyRequests)
        }
    }

    @Test func aSuccessfulSignInForgetsTheFailuresOfThatDevice() async throws {
        try await AuthTestApp.withApp { api, _ in
            let email = AuthTestApp.uniqueEmail()
            _ = try await api.signUp(email: email)
            let allowance = ThrottlePolicy.accountFromAddress.allowance
            try await Self.fail(api, email: email, times: allowance - 1, from: "203.0.113.9")
            #expect(try await api.signIn(email: email, headers: [Self.realIP: "203.0.113.9"]).status == .ok)
            try await Self.fail(api, email: email, times: allowance - 1, from: "203.0.113.9")
            #expect(try await api.signIn(email: email, headers: [Self.realIP: "203.0.113.9"]).status == .ok)
        }
    }

    /// Sign-ins of one account from one address at once, each succeeding: one's success deletes the row another is
    /// about to lock. None of them fails (the race used to end one in a 500).
    @Test func concurrentSuccessfulChecksOfOneAccountNeverFail() async throws {
        try await withTestDatabase(migrators: AuthTestApp.migrators) { database in
            try await database.makePool(size: 8, searchPath: "auth").closing { pool in
                let throttle = ThrottleStore(pool: pool)
                let keys = ThrottleKey.forSignIn(email: EmailAddress(normalizing: "racer@example.com")!,
                                                 clientAddress: "203.0.113.40")
                let admitted = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            var admitted = 0
                            for _ in 0..<40 {
                                let now = Date()
                                guard case .counted(let attempt) = try await throttle.beginAttempt(keys, now: now)
                                else { continue }
                                try await throttle.attemptSucceeded(attempt, keys: keys, now: now)
                                admitted += 1
                            }
                            return admitted
                        }
                    }
                    return try await group.reduce(0, +)
                }
                #expect(admitted > 0)
            }
        }
    }

    @Test func passwordConfirmationsCountAgainstTheSameThrottle() async throws {
        try await AuthTestApp.withApp { api, _ in
            let session = try await api.signUp()
            for _ in 0...ThrottlePolicy.accountFromAddress.allowance {
                let response = try await api.call(.delete, "/v1/auth/me", token: session.accessToken,
                                                  json: AccountDeletion(password: "guess"))
                #expect(response.status == .forbidden)
            }
            let response = try await api.call(.delete, "/v1/auth/me", token: session.accessToken,
                                              json: AccountDeletion(password: AuthTestApp.password))
            #expect(response.status == .tooManyRequests)
        }
    }
}
