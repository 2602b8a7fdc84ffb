import Contracts
import ServiceKit
import Testing

/// `limit` as clients send it: any positive whole number is a page size, the largest page past the maximum, however
/// many digits; anything else names the field.
@Suite struct PageLimitTests {
    @Test(arguments: [
        (nil, 20), ("1", 1), ("007", 7), ("50", 50), ("51", 50), ("1000", 50),
        ("9223372036854775807", 50), ("72403525519124627456", 50),
    ] as [(Substring?, Int)])
    func positiveWholeNumbersArePageSizes(_ text: Substring?, _ expected: Int) {
        #expect(PageLimit.parse(text, default: 20, maximum: 50) == .size(expected))
    }

    @Test(arguments: ["", "0", "000", "-1", "+5", "1.5", "1e3", "ten", "٣"] as [Substring])
    func anythingElseIsRefusedByName(_ text: Substring) {
        guard case .refused(let error) = PageLimit.parse(text, default: 20, maximum: 50) else {
            Issue.record("\(text) was taken")
            return
        }
        #expect(error.field == "limit")
        #expect(error.message.contains("from 1"))
    }
}
