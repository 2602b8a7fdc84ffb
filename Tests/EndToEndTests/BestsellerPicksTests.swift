import Contracts
import Foundation
import NIOHTTP1
import Testing

extension EndToEnd {
    /// The best-sellers app's list picker, its main navigation: every list of the current date is the server's
    /// (its scheduled refresh fetched the NYT's overview), so a pick never spends the NYT's budget nor waits for it.
    @Suite struct BestsellerPicksTests {
        struct Logged: Decodable { let path: String }
        struct Overview: Decodable {
            struct Results: Decodable { let lists: [List] }
            struct List: Decodable { let list_name_encoded: String }
            let results: Results
        }

        /// As a new user: ten different lists opened a second apart answer 200 each (never a 429 to wait out), and
        /// none of those requests makes an upstream call (the replay's request log shows none for the overview, the names or
        /// the lists picked; whatever else the refresh fetches meanwhile is its own schedule).
        @Test func tenListsOpenedASecondApartAnswerAtOnceWithoutCallingTheNYT() async throws {
            let stack = try StackUnderTest.required()
            try #require(!stack.replayURL.isEmpty, "needs E2E_REPLAY_URL")
            let replay = StackClient(stack.replayURL)
            func log() async throws -> [String] {
                try await replay.get("/__replay/requests").decode([Logged].self).map(\.path)
            }
            // The refresh fetches the names and then the overview within seconds of the stack's start.
            let overviewPath = "/svc/books/v3/lists/full-overview.json"
            let deadline = ContinuousClock.now + .seconds(60)
            while try await !log().contains(overviewPath), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(500))
            }
            try #require(try await log().contains(overviewPath), "the scheduled refresh never fetched the overview")
            // Asked for is not yet kept: the answer is stored for every replica a moment after it arrives.
            try await Task.sleep(for: .seconds(1))
            // Which lists the overview carries, asked of the replay itself (before the requests counted below).
            let overview = try await replay.get(overviewPath + "?api-key=e2e").decode(Overview.self)
            let lists = overview.results.lists.map(\.list_name_encoded).prefix(10)
            try #require(lists.count == 10)

            let app = try await CatalogSourcesTests.signedIn(.bestsellers)
            let categories = try await app.get("/v1/catalog/bestsellers/categories").decode(CategoryList.self)
            #expect(Set(lists).isSubset(of: categories.categories.map(\.id)))
            let before = try await log().count
            for (index, list) in lists.enumerated() {
                if index > 0 { try await Task.sleep(for: .seconds(1)) }
                let response = try await app.get("/v1/catalog/bestsellers/items?category=\(list)")
                #expect(response.status == .ok, "\(list)")
                let page = try response.decode(CatalogPage.self)
                #expect(!page.items.isEmpty && page.items.allSatisfy { $0.book?.category == list }, "\(list)")
            }
            let during = try await log().dropFirst(before)
            let asked = during.filter { path in
                path.hasSuffix("/names.json") || path.hasSuffix("overview.json")
                    || lists.contains { path.hasSuffix("/lists/current/\($0).json") }
            }
            #expect(asked.isEmpty, "upstream calls made by the picks: \(asked)")
        }
    }
}
