@testable import AuthService
import Contracts
import Foundation
import Testing

@Suite struct EmailAddressTests {
    @Test(arguments: [
        ("  Ana.Silva@Example.COM ", "ana.silva@example.com"),
        ("o'brien+news@mail.example.org", "o'brien+news@mail.example.org"),
        ("ÉLODIE@exemple.fr", "élodie@exemple.fr"),
    ])
    func normalizes(_ raw: String, _ expected: String) {
        #expect(EmailAddress(normalizing: raw)?.value == expected)
    }

    @Test(arguments: ["", "plain", "@example.com", "ana@", "ana@localhost", "ana@@example.com", "a b@example.com",
                      "ana@exa mple.com", ".ana@example.com", "ana..b@example.com", "ana@-example.com",
                      "<ana>@example.com", String(repeating: "a", count: 65) + "@example.com"])
    func refuses(_ raw: String) {
        #expect(EmailAddress(normalizing: raw) == nil)
    }
}

@Suite struct PasswordPolicyTests {
    let email = EmailAddress(normalizing: "ana@example.com")

    @Test func acceptsLongPassphrasesWithoutCompositionRules() {
        #expect(PasswordPolicy.problem(with: "correct horse battery staple", email: email) == nil)
        #expect(PasswordPolicy.problem(with: "all lower case and long", email: email) == nil)
        #expect(PasswordPolicy.problem(with: String(repeating: "ab", count: 32), email: email) == nil)
        #expect(PasswordPolicy.problem(with: "émoji🙂ok", email: email) == nil)  // 8 characters
    }

    @Test func refusesShortLongCommonAndPersonal() {
        #expect(PasswordPolicy.problem(with: "1234567", email: email) != nil)
        #expect(PasswordPolicy.problem(with: String(repeating: "x", count: 257) + "y", email: email) != nil)
        #expect(PasswordPolicy.problem(with: "PassWord123", email: email) != nil)
        #expect(PasswordPolicy.problem(with: "ana@example.com", email: email) != nil)
        #expect(PasswordPolicy.problem(with: "zzzzzzzzzzzz", email: email) != nil)
    }

    @Test func thePreHashKeepsEveryCharacterMeaningful() {
        let stem = String(repeating: "x", count: 100)
        #expect(PasswordHasher.prehash(stem + "1") != PasswordHasher.prehash(stem + "2"))
        #expect(PasswordHasher.prehash(stem).utf8.count == 44)  // well under bcrypt's 72 bytes
        // NFC: "é" typed as one code point or as e + combining accent is the same password.
        #expect(PasswordHasher.prehash("caf\u{E9} au lait") == PasswordHasher.prehash("cafe\u{301} au lait"))
    }
}

@Suite struct ThrottlePolicyTests {
    let policy = ThrottlePolicy(allowance: 3, window: 60, firstBlock: 10, longestBlock: 35)
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func blocksPastTheAllowanceDoublingUpToTheCap() {
        var state: ThrottlePolicy.State?
        for second in 0..<3 {
            state = policy.recordingFailure(state, now: start.addingTimeInterval(Double(second)))
            #expect(policy.retryAfter(state, now: start.addingTimeInterval(Double(second))) == nil)
        }
        var blocks: [TimeInterval] = []
        for second in 3..<7 {
            let now = start.addingTimeInterval(Double(second))
            state = policy.recordingFailure(state, now: now)
            blocks.append(policy.retryAfter(state, now: now) ?? 0)
        }
        #expect(blocks == [10, 20, 35, 35])
    }

    @Test func theCountForgetsItselfAfterTheWindow() {
        var state: ThrottlePolicy.State?
        for _ in 0..<5 { state = policy.recordingFailure(state, now: start) }
        let later = start.addingTimeInterval(61)
        #expect(policy.retryAfter(state, now: later) == nil)
        #expect(policy.isStale(state!, now: later))
        state = policy.recordingFailure(state, now: later)
        #expect(state?.failures == 1)
        #expect(policy.retryAfter(state, now: later) == nil)
    }

    /// A check is counted before it runs; a right password takes the count back, and the block as it was before.
    @Test func aRefundPutsTheCountAndTheBlockBackAsTheyWere() throws {
        var before: ThrottlePolicy.State?
        for _ in 0..<3 { before = policy.recordingFailure(before, now: start) }  // at the allowance, not blocked
        var counted = policy.recordingFailure(before, now: start)  // the right password's count crosses it
        #expect(policy.retryAfter(counted, now: start) != nil)
        // As read back from PostgreSQL: to the microsecond.
        var stored = counted
        stored.blockedUntil = counted.blockedUntil.map { Date(timeIntervalSince1970: ($0.timeIntervalSince1970 * 1e6).rounded() / 1e6) }
        var refunded = policy.refundingFailure(stored, before: before, counted: counted)
        #expect(refunded.failures == before?.failures)
        #expect(refunded.blockedUntil == nil)
        // A block that ran out earlier is not renewed (nor lengthened) by a right password.
        for _ in 0..<2 { before = policy.recordingFailure(before, now: start) }  // blocked for 10 s, then 20 s
        let later = start.addingTimeInterval(25)
        #expect(policy.retryAfter(before, now: later) == nil)
        counted = policy.recordingFailure(before, now: later)
        #expect(policy.retryAfter(counted, now: later) != nil)
        refunded = policy.refundingFailure(counted, before: before, counted: counted)
        #expect(refunded.failures == before?.failures)
        #expect(policy.retryAfter(refunded, now: later) == nil)
        // A failure counted in between (another guess at the same time) keeps the block it set.
        let guess = policy.recordingFailure(counted, now: later.addingTimeInterval(1))
        let kept = policy.refundingFailure(guess, before: before, counted: counted)
        #expect(kept.failures == guess.failures - 1)
        #expect(kept.blockedUntil == guess.blockedUntil)
    }
}

@Suite struct SessionPolicyTests {
    let policy = SessionPolicy(idleLifetime: 100, absoluteLifetime: 1000, reuseGrace: 30)
    let now = Date(timeIntervalSince1970: 2_000_000)

    func state(generation: Int = 3, rotatedSecondsAgo: Double? = 10, ended: Bool = false) -> SessionPolicy.State {
        SessionPolicy.State(generation: generation, rotatedAt: rotatedSecondsAgo.map { now.addingTimeInterval(-$0) },
                            idleExpiresAt: now.addingTimeInterval(50), absoluteExpiresAt: now.addingTimeInterval(500),
                            ended: ended)
    }

    @Test func decidesEachCase() {
        #expect(policy.decide(presentedGeneration: 3, state: state(), now: now) == .rotate)
        #expect(policy.decide(presentedGeneration: 2, state: state(), now: now) == .replay)
        #expect(policy.decide(presentedGeneration: 2, state: state(rotatedSecondsAgo: 31), now: now) == .reuse)
        #expect(policy.decide(presentedGeneration: 1, state: state(), now: now) == .reuse)
        #expect(policy.decide(presentedGeneration: 3, state: state(ended: true), now: now) == .expired)
        #expect(policy.decide(presentedGeneration: 3, state: state(), now: now.addingTimeInterval(50)) == .expired)
        var pastAbsolute = state()
        pastAbsolute.idleExpiresAt = now.addingTimeInterval(900)
        pastAbsolute.absoluteExpiresAt = now
        #expect(policy.decide(presentedGeneration: 3, state: pastAbsolute, now: now) == .expired)
    }

    /// Past the grace window, only a retry carrying the key of the refresh that retired the token gets its successor
    /// again, within the retry window; a copy of the token without it, or an older token, is reuse.
    @Test func aRetryWithTheRefreshsKeyIsRecoveredLongAfterTheGrace() {
        var policy = policy
        policy.retryWindow = 86_400
        let hoursLater = state(rotatedSecondsAgo: 3 * 3600)
        #expect(policy.decide(presentedGeneration: 2, state: hoursLater, now: now, sameKey: true) == .recover)
        #expect(policy.decide(presentedGeneration: 2, state: hoursLater, now: now, sameKey: false) == .reuse)
        #expect(policy.decide(presentedGeneration: 1, state: hoursLater, now: now, sameKey: true) == .reuse)
        #expect(policy.decide(presentedGeneration: 2, state: state(rotatedSecondsAgo: 86_401), now: now, sameKey: true)
                == .reuse)
        // Within the grace window the key changes nothing; an ended session stays ended.
        #expect(policy.decide(presentedGeneration: 2, state: state(), now: now, sameKey: true) == .replay)
        #expect(policy.decide(presentedGeneration: 2, state: state(rotatedSecondsAgo: 3600, ended: true), now: now,
                              sameKey: true) == .expired)
    }

    @Test func idleExpiryNeverPassesTheAbsoluteLimit() {
        #expect(policy.idleExpiry(after: now, absoluteExpiry: now.addingTimeInterval(500)) == now.addingTimeInterval(100))
        #expect(policy.idleExpiry(after: now, absoluteExpiry: now.addingTimeInterval(40)) == now.addingTimeInterval(40))
    }
}

@Suite struct KeyScheduleTests {
    let schedule = KeySchedule(rotationInterval: 1000, publishLead: 100, verificationTail: 50)
    let t0 = Date(timeIntervalSince1970: 3_000_000)

    func key(_ kid: String, signsFrom offset: Double) -> KeySchedule.Key {
        KeySchedule.Key(kid: kid, createdAt: t0.addingTimeInterval(offset - 100), signsFrom: t0.addingTimeInterval(offset))
    }

    @Test func aFreshInstallSignsAtOnce() {
        #expect(schedule.nextKeySigningTime(in: [], now: t0) == t0)
    }

    @Test func aNewKeyIsPublishedBeforeItSignsAndTheOldOneLingers() {
        let first = key("a", signsFrom: 0)
        #expect(schedule.nextKeySigningTime(in: [first], now: t0.addingTimeInterval(899)) == nil)
        let due = t0.addingTimeInterval(900)
        let signsFrom = try! #require(schedule.nextKeySigningTime(in: [first], now: due))
        #expect(signsFrom == due.addingTimeInterval(100))
        let second = KeySchedule.Key(kid: "b", createdAt: due, signsFrom: signsFrom)
        let keys = [first, second]
        // Published at once, but "a" keeps signing until "b"'s time comes.
        #expect(schedule.publishedKeys(in: keys, now: due).map(\.kid) == ["a", "b"])
        #expect(schedule.signingKey(in: keys, now: due.addingTimeInterval(99))?.kid == "a")
        #expect(schedule.signingKey(in: keys, now: signsFrom)?.kid == "b")
        #expect(schedule.nextKeySigningTime(in: keys, now: due.addingTimeInterval(10)) == nil)
        // "a" stays published while its tokens may be unexpired, then retires.
        #expect(schedule.publishedKeys(in: keys, now: signsFrom.addingTimeInterval(49)).map(\.kid) == ["a", "b"])
        #expect(schedule.publishedKeys(in: keys, now: signsFrom.addingTimeInterval(50)).map(\.kid) == ["b"])
        #expect(schedule.retiredKeys(in: keys, now: signsFrom.addingTimeInterval(50)).map(\.kid) == ["a"])
    }
}

@Suite struct TrustedProxiesTests {
    @Test func matchesNetworksAndIgnoresUntrustedHeaders() throws {
        let proxies = try TrustedProxies.parse("127.0.0.1/32, 10.0.0.0/8, ::1").get()
        #expect(proxies.clientAddress(peer: "10.1.2.3", forwarded: "203.0.113.5") == "203.0.113.5")
        #expect(proxies.clientAddress(peer: "::1", forwarded: "2001:db8::1") == "2001:db8::1")
        #expect(proxies.clientAddress(peer: "192.168.1.1", forwarded: "203.0.113.5") == "192.168.1.1")
        #expect(proxies.clientAddress(peer: "10.1.2.3", forwarded: "not an address") == "10.1.2.3")
        #expect(proxies.clientAddress(peer: "11.0.0.1", forwarded: "203.0.113.5") == "11.0.0.1")
    }

    @Test func refusesNonsense() {
        #expect(TrustedProxies.parse("10.0.0.0/33") == .failure(.init(entry: "10.0.0.0/33")))
        #expect(TrustedProxies.parse("gateway") == .failure(.init(entry: "gateway")))
    }
}

@Suite struct PreferencesTests {
    @Test func mergesAndRemoves() throws {
        let merged = try Preferences.merge(["theme": "dark", "old": nil], into: ["old": "x", "keep": "y"]).get()
        #expect(merged == ["theme": "dark", "keep": "y"])
    }

    @Test func refusesBadKeysLongValuesAndTooMany() {
        #expect((try? Preferences.merge(["bad key": "x"], into: [:]).get()) == nil)
        #expect((try? Preferences.merge(["note": String(repeating: "x", count: 257)], into: [:]).get()) == nil)
        let many = Dictionary(uniqueKeysWithValues: (0..<33).map { ("k\($0)", String?.some("v")) })
        #expect((try? Preferences.merge(many, into: [:]).get()) == nil)
    }

    /// A default category belongs to one experience: moving to another clears it unless the move sets a new one.
    @Test func aNewExperienceClearsTheDefaultCategoryUnlessItSetsOne() throws {
        let stored = ["defaultCategory": "music", "theme": "dark"]
        func apply(_ patch: [String: String?]?, to new: ExperienceID?) throws -> [String: String] {
            guard let patch = Preferences.patch(patch, movingFrom: .ticketmaster, to: new) else { return stored }
            return try Preferences.merge(patch, into: stored).get()
        }
        #expect(try apply(nil, to: .bestsellers) == ["theme": "dark"])
        #expect(try apply(["theme": "light"], to: .bestsellers) == ["theme": "light"])
        #expect(try apply(["defaultCategory": "hardcover-fiction"], to: .bestsellers)
                == ["defaultCategory": "hardcover-fiction", "theme": "dark"])
        #expect(try apply(["defaultCategory": String?.none], to: .bestsellers) == ["theme": "dark"])
        // Staying, or not moving at all, keeps it.
        #expect(try apply(nil, to: .ticketmaster) == stored)
        #expect(try apply(nil, to: nil) == stored)
        #expect(try apply(["theme": "light"], to: nil) == ["defaultCategory": "music", "theme": "light"])
    }
}

@Suite struct RefreshTokenTests {
    @Test func tokensAreRandomAndSuccessorsDeterministic() {
        let token = RefreshTokens.generate()
        #expect(RefreshTokens.isWellFormed(token))
        #expect(token != RefreshTokens.generate())
        let nonce = RandomBytes.data(count: 32)
        let next = RefreshTokens.successor(of: token, nonce: nonce)
        #expect(RefreshTokens.isWellFormed(next))
        #expect(next == RefreshTokens.successor(of: token, nonce: nonce))
        #expect(next != RefreshTokens.successor(of: token, nonce: RandomBytes.data(count: 32)))
        #expect(RefreshTokens.digest(token) != RefreshTokens.digest(next))
    }
}
