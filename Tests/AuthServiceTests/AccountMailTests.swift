@testable import AuthService
import Foundation
import Testing

/// The pure parts of account recovery: link tokens, the mails' text, the retry schedule.
@Suite struct AccountMailTests {
    @Test func aTokenReadsBackAsItsAccountAndSecret() throws {
        let account = UUID()
        let token = LinkToken.generate(for: account)
        #expect(token.text.count == 64)
        let read = try #require(LinkToken(text: token.text))
        #expect(read == token)
        #expect(read.accountID == account)
        #expect(LinkToken.generate(for: account) != token)  // 256 fresh random bits each time
    }

    @Test func onlyTheLiveTokenOfItsOwnAccountChecksOut() throws {
        let now = Date()
        let token = LinkToken.generate(for: UUID())
        let stored = LinkToken.Stored(digest: token.digest, expiresAt: now.addingTimeInterval(60))
        #expect(token.check(against: stored, now: now) == .valid)
        #expect(token.check(against: stored, now: now.addingTimeInterval(60)) == .expired)
        #expect(token.check(against: nil, now: now) == .invalid)
        #expect(LinkToken.generate(for: token.accountID).check(against: stored, now: now) == .invalid)

        var altered = Array(token.text)
        altered[63] = altered[63] == "A" ? "B" : "A"
        let changed = LinkToken(text: String(altered))
        #expect(changed == nil || changed?.check(against: stored, now: now) == .invalid)
        for text in ["", String(token.text.dropLast()), token.text + "A", String(repeating: "*", count: 64)] {
            #expect(LinkToken(text: text) == nil, "\(text)")
        }
    }

    @Test func theMailSaysWhereTheLinkLeadsAndForHowLong() throws {
        let token = LinkToken.generate(for: UUID())
        let link = AccountMail.link(for: .passwordReset, token: token, publicBaseURL: "https://fav.example/")
        #expect(link == "https://fav.example/account/reset-password?token=\(token.text)")
        let reset = AccountMail(purpose: .passwordReset, link: link, validFor: 1800)
        #expect(reset.text.contains("\n\(link)\n"))
        #expect(reset.text.contains("30 minutes"))
        let verify = AccountMail(purpose: .emailVerification, link: "L", validFor: 86_400)
        #expect(verify.subject != reset.subject)
        #expect(verify.text.contains("1 day"))
        #expect(AccountMail.describe(7200) == "2 hours")
        #expect(AccountMail.describe(90) == "1 minute")
        #expect(reset.text.unicodeScalars.allSatisfy { $0.isASCII })  // sent as 7bit text
    }

    @Test func retriesBackOffUpToTheLongestDelay() {
        let delays = (1...12).map { AccountMail.retryDelay(afterAttempts: $0, longest: 300, jitter: 0) }
        #expect(delays.prefix(4) == [1, 2, 4, 8])
        #expect(delays.last == 300)
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(AccountMail.retryDelay(afterAttempts: 3, longest: 300, jitter: 0.25) == 3)
    }
}
