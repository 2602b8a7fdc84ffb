import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation

/// What a heart costs on the device with a large synced copy: the client offline (nothing listens at its server), so
/// each heart is saved to the user's queue and its send fails at once, as on a phone without network. For contrast,
/// what saving the whole copy costs, which a heart used to do.
@main
struct ClientBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "client-bench")

    @Option(help: "Favorites in the synced copy.") var cached = 5_000
    @Option(help: "Hearts to time.") var hearts = 200
    @Option(help: "A directory for the client's files (a fresh one is made inside).") var directory: String

    func run() async throws {
        let root = URL(fileURLWithPath: directory).appendingPathComponent("client-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let user = UserProfile(id: UUID(), email: "bench@example.com", experience: .rijksmuseum, preferences: [:],
                               createdAt: Date())
        let store = FileLocalStore(directory: root)
        let copy = try syncedCopy(of: cached)
        try store.write(copy, to: .favorites, of: user.id)

        let session = StoredSession(accessToken: "a", refreshToken: "r",
                                    accessTokenExpiresAt: Date(timeIntervalSinceNow: 3_600), user: user)
        let client = FavoriteMeClient(baseURL: URL(string: "http://127.0.0.1:1")!, tokens: MemoryTokenStore(session),
                                      local: store, timeout: 2)
        _ = try await client.restoreSession()  // the copy is read once, as at an app's launch
        let copyURL = store.url(of: .favorites, for: user.id)
        let copyWritten = try modificationDate(copyURL)

        var heartTimes: [Double] = []
        for index in 0..<hearts {
            let started = ContinuousClock.now
            _ = try await client.favorite("BENCH-\(index)", in: .rijksmuseum)
            heartTimes.append(milliseconds(ContinuousClock.now - started))
        }
        let rewritten = try modificationDate(copyURL) != copyWritten
        let queueBytes = try Data(contentsOf: store.url(of: .queue, for: user.id)).count

        var wholeCopyTimes: [Double] = []
        for _ in 0..<max(1, hearts / 4) {
            let started = ContinuousClock.now
            try store.write(try syncedCopy(of: cached), to: .favorites, of: user.id)
            wholeCopyTimes.append(milliseconds(ContinuousClock.now - started))
        }
        print(String(format: "heart, %d cached favorites: median %.2f ms, p99 %.2f ms over %d hearts (offline)",
                     cached, percentile(heartTimes, 0.5), percentile(heartTimes, 0.99), hearts))
        print("  synced copy \(copy.count / 1024) KiB, rewritten by a heart: \(rewritten ? "yes" : "no"); "
            + "queue after \(hearts) waiting hearts: \(queueBytes / 1024) KiB")
        print(String(format: "  encoding and saving the whole copy (what a heart would cost if it saved it): median %.2f ms",
                     percentile(wholeCopyTimes, 0.5)))
    }

    /// The copy as a sync leaves it (the client's document format 1).
    private func syncedCopy(of count: Int) throws -> Data {
        struct Copy: Encodable {
            var format = 1
            var version: Int64
            var favorites: [String: [String: Favorite]]
        }
        var favorites: [String: Favorite] = [:]
        for index in 0..<count {
            favorites["SK-\(index)"] = Favorite(
                experience: .rijksmuseum, itemId: "SK-\(index)", title: "A painting of some length, number \(index)",
                subtitle: "A painter, 1642", imageURL: "https://lh3.googleusercontent.com/\(index)=s400",
                price: nil, rating: nil, favoritedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(Copy(version: Int64(count), favorites: ["rijksmuseum": favorites]))
    }

    private func modificationDate(_ url: URL) throws -> Date? {
        try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date
    }

    private func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
    }

    private func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
    }
}
