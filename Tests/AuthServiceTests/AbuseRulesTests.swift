@testable import AuthService
import Contracts
import Foundation
import Testing

/// The pure rules behind the abuse fixes: Punycode and addresses, request limits whose Retry-After tells the truth,
/// client keys by /64, and the line password hashing waits in.
@Suite struct AbuseRulesTests {
    /// RFC 3492's and IDNA's published examples.
    @Test(arguments: [("bücher", "bcher-kva"), ("münchen", "mnchen-3ya"), ("他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"),
                      ("пример", "e1afmkfd"), ("испытание", "80akhbyknj4f"), ("ελληνικά", "hxargifdar")])
    func punycodeEncodesAsPublished(_ label: String, _ encoded: String) {
        #expect(Punycode.encode(label) == encoded)
    }

    @Test func addressesAreKeptAsMailSystemsSeeThem() {
        #expect(EmailAddress(normalizing: "Ana@Bücher.Example")?.value == "ana@xn--bcher-kva.example")
        #expect(EmailAddress(normalizing: "ana@xn--bcher-kva.example")?.value == "ana@xn--bcher-kva.example")
        #expect(EmailAddress(normalizing: "ana@ｅｘａｍｐｌｅ.com")?.value == "ana@example.com")  // IDNA maps full width
        #expect(EmailAddress(normalizing: "ana@例え。jp")?.value == "ana@xn--r8jz45g.jp")
        #expect(EmailAddress(normalizing: "иван@пример.рф")?.value == "иван@xn--e1afmkfd.xn--p1ai")
        #expect(EmailAddress(normalizing: "山田たろう@example.jp") != nil)  // Han with kana, as Japanese is written
        #expect(EmailAddress(normalizing: "ｔａｒｏ@example.jp") == nil)  // full-width: NFKC would change it
        #expect(EmailAddress(normalizing: "ﬁle@example.com") == nil)  // a ligature
        #expect(EmailAddress(normalizing: "p\u{430}ypal@example.com") == nil)  // Cyrillic а among Latin
        #expect(EmailAddress(normalizing: "ana@exa_mple.com") == nil)  // not a host name
        #expect(EmailAddress.parse("a" + String(repeating: "\u{301}", count: 400) + "@example.com")
            == .failure(.init(message: "must be at most 320 bytes (UTF-8)")))
    }

    /// A client that waits as long as Retry-After says is let in; refused requests count nothing.
    @Test func aRequestLimitsRetryAfterTellsTheTruth() {
        let limit = RequestLimit(allowance: 2, window: 3600)
        let start = Date(timeIntervalSince1970: 1_000_000)
        var state: ThrottlePolicy.State?
        for offset in [0.0, 10] {
            guard case .admitted(let counted) = limit.decide(state, now: start.addingTimeInterval(offset)) else {
                Issue.record("refused within the allowance")
                return
            }
            state = counted
        }
        var now = start.addingTimeInterval(20)
        for _ in 0..<4 {  // asking again as told, or sooner, never moves the end
            guard case .refused(let wait) = limit.decide(state, now: now) else {
                Issue.record("admitted past the allowance")
                return
            }
            #expect(now.addingTimeInterval(wait) == start.addingTimeInterval(3600))
            now = now.addingTimeInterval(wait / 2)
        }
        guard case .refused(let wait) = limit.decide(state, now: now) else { return }
        if case .admitted = limit.decide(state, now: now.addingTimeInterval(wait)) {} else {
            Issue.record("a client that waited as told was refused")
        }
    }

    @Test func aClientIsAnIPv4AddressOrAnIPv6Slash64() {
        #expect(ThrottleKey.network(of: "203.0.113.9") == "203.0.113.9")
        #expect(ThrottleKey.network(of: "2001:db8:1:2::7") == "2001:db8:1:2::/64")
        #expect(ThrottleKey.network(of: "2001:0db8:0001:0002:ffff:1:2:3") == "2001:db8:1:2::/64")
        #expect(ThrottleKey.network(of: "2001:db8:1:3::7") == "2001:db8:1:3::/64")
        #expect(ThrottleKey.network(of: "::ffff:203.0.113.9") == "203.0.113.9")
        let keys = { (address: String) in
            ThrottleKey.forSignIn(email: EmailAddress(normalizing: "a@example.com")!, clientAddress: address).map(\.key)
        }
        #expect(keys("2001:db8::1") == keys("2001:db8::2"))
    }

    /// With one place and a line of one, a third caller is turned away at once, and the one in line runs next.
    @Test func theHashingLineIsBounded() async throws {
        let queue = AdmissionQueue(concurrency: 1, lineLength: 1)
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        let (started, starter) = AsyncStream.makeStream(of: Int.self)
        let first = Task {
            try await queue.run {
                starter.yield(1)
                for await _ in release { break }
                return 1
            }
        }
        var startedIterator = started.makeAsyncIterator()
        #expect(await startedIterator.next() == 1)
        let second = Task { try await queue.run { 2 } }
        for _ in 0..<500 where queue.waiting == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(queue.waiting == 1)
        await #expect(throws: AdmissionQueue.Full.self) { try await queue.run { 3 } }
        releaser.yield()
        #expect(try await first.value == 1)
        #expect(try await second.value == 2)
        #expect(try await queue.run { 4 } == 4)
    }
}
