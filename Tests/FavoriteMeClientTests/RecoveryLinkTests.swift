import FavoriteMeClient
import Foundation
import Testing

/// The links of the recovery mails, as an app receives them (universal links): which action, and the token.
@Suite struct RecoveryLinkTests {
    static let token = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v"

    static func link(_ text: String) -> RecoveryLink? {
        FavoriteMeClient.recoveryLink(from: URL(string: text)!)
    }

    @Test func aResetLinkAsksForANewPassword() {
        let link = Self.link("https://favoriteme.example/account/reset-password?token=\(Self.token)")
        #expect(link == .passwordReset(Self.token))
        #expect(link?.token == Self.token)
    }

    @Test func aVerificationLinkConfirmsTheEmail() {
        let link = Self.link("https://favoriteme.example/account/verify-email?token=\(Self.token)")
        #expect(link == .emailVerification(Self.token))
        #expect(link?.token == Self.token)
    }

    @Test func theHostPortAndAPathPrefixDoNotMatter() {
        #expect(Self.link("http://localhost:8080/account/verify-email?token=t1") == .emailVerification("t1"))
        #expect(Self.link("https://example.com/favme/account/reset-password?token=t2") == .passwordReset("t2"))
        #expect(Self.link("https://example.com/account/reset-password/?token=t3") == .passwordReset("t3"))
    }

    @Test func anyOtherPathIsNoRecoveryLink() {
        for text in [
            "https://example.com/?token=t",
            "https://example.com/account?token=t",
            "https://example.com/account/?token=t",
            "https://example.com/reset-password?token=t",
            "https://example.com/account/reset-passwords?token=t",
            "https://example.com/account/Reset-Password?token=t",
            "https://example.com/account/reset-password/confirm?token=t",
            "https://example.com/accounts/verify-email?token=t",
            "https://example.com/account//verify-email?token=t",
            "https://example.com/v1/auth/password-reset/confirm?token=t",
            "https://example.com/account/verify-email.html?token=t",
        ] {
            #expect(Self.link(text) == nil, "\(text)")
        }
    }

    @Test func aLinkWithoutOneNonEmptyTokenIsNoRecoveryLink() {
        for text in [
            "https://example.com/account/reset-password",
            "https://example.com/account/reset-password?",
            "https://example.com/account/reset-password?token",
            "https://example.com/account/reset-password?token=",
            "https://example.com/account/verify-email?tokens=t",
            "https://example.com/account/verify-email?Token=t",
            "https://example.com/account/verify-email?token=t1&token=t2",
            "https://example.com/account/verify-email#token=t",
        ] {
            #expect(Self.link(text) == nil, "\(text)")
        }
    }

    @Test func otherQueryItemsAndAFragmentAreIgnored() {
        #expect(Self.link("https://example.com/account/reset-password?utm_source=mail&token=t&lang=nl#top")
            == .passwordReset("t"))
        #expect(Self.link("https://example.com/account/verify-email?token=t&token2=u") == .emailVerification("t"))
    }

    @Test func theTokenIsPercentDecoded() {
        // A mail app or a redirector may encode characters that need no encoding.
        #expect(Self.link("https://example.com/account/reset-password?token=ab%2Dcd%5Fef") == .passwordReset("ab-cd_ef"))
        #expect(Self.link("https://example.com/account/verify-email?token=a%2Bb%3D") == .emailVerification("a+b="))
        // The path too.
        #expect(Self.link("https://example.com/account/verify%2Demail?token=t") == .emailVerification("t"))
        // `+` is not a space in a URL's query: the token is kept as it came (the server refuses what is not its own).
        #expect(Self.link("https://example.com/account/verify-email?token=a+b") == .emailVerification("a+b"))
    }
}
