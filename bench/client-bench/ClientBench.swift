import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a heart costs on the device with a large synced copy, two ways:
///
/// - offline: nothing listens at the client's server, so each heart is saved to the user's queue and its send fails
///   at once, as on a phone without network;
/// - live: live changes on, the server answered in the process (``StandInServer``, no network's or server's time),
///   so each heart is saved, sent, marked sent, and its echo arrives on the stream and is synced into the copy,
///   the heart timed until the echo is applied.
///
/// For contrast, what saving the whole copy costs, which every echo used to do.
@main
struct ClientBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "client-bench")

    @Option(help: "Favorites in the synced copy.") var cached = 5_000
    @Option(help: "Hearts to time.") var hearts = 200
    @Flag(help: "Live changes on, the server in the process (else offline).") var live = false
    @Option(help: "A directory for the client's files (a fresh one is made inside).") var directory: String

    func run() async throws {
        let root = URL(fileURLWithPath: directory).appendingPathComponent("client-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let user = UserProfile(id: UUID(), email: "bench@example.com", experience: .rijksmuseum, preferences: [:],
                               createdAt: Date())
        let store = FileLocalStore(directory: root)
        let favorites = Self.favorites(cached)
        let copy = try syncedCopy(of: favorites)
        try store.write(copy, to: .favorites, of: user.id)

        let session = StoredSession(accessToken: "a", refreshToken: "r",
                                    accessTokenExpiresAt: Date(timeIntervalSinceNow: 3_600), user: user)
        let server = live ? StandInServer(feedOf: favorites) : nil
        let client = FavoriteMeClient(
            baseURL: URL(string: live ? "http://\(StandInServer.host)" : "http://127.0.0.1:1")!,
            tokens: MemoryTokenStore(session), local: store, urlSession: server?.session ?? .shared, timeout: 2,
            watchesNetwork: false)
        _ = try await client.restoreSession()  // the copy is read once, as at an app's launch
        let copyURL = store.url(of: .favorites, for: user.id)
        let copyWritten = try modificationDate(copyURL)

        var stream = live ? client.liveChanges().makeAsyncIterator() : nil
        if stream != nil {
            guard await stream?.next() == .connected else { throw ValidationError("the live stream did not open") }
        }
        var heartTimes: [Double] = []
        let cpuBefore = Self.processCPUTime()
        for index in 0..<hearts {
            let itemId = "BENCH-\(index)"
            let started = ContinuousClock.now
            _ = try await client.favorite(itemId, in: .rijksmuseum)
            if stream != nil { try await echo(of: itemId, from: &stream) }
            heartTimes.append(milliseconds(ContinuousClock.now - started))
        }
        let cpuPerHeart = (Self.processCPUTime() - cpuBefore) * 1_000 / Double(max(1, hearts))
        let rewritten = try modificationDate(copyURL) != copyWritten
        let queueBytes = (try? Data(contentsOf: store.url(of: .queue, for: user.id)).count) ?? 0
        let journalBytes = (try? Data(contentsOf: store.url(of: .journal, for: user.id)).count) ?? 0

        var wholeCopyTimes: [Double] = []
        for _ in 0..<max(1, hearts / 4) {
            let started = ContinuousClock.now
            try store.write(try syncedCopy(of: favorites), to: .favorites, of: user.id)
            wholeCopyTimes.append(milliseconds(ContinuousClock.now - started))
        }
        print(String(format: "heart, %d cached favorites, %@: CPU %.2f ms per heart; wall median %.2f ms, p99 %.2f ms "
                     + "over %d hearts", cached, live ? "live (until its echo is applied)" : "offline", cpuPerHeart,
                     percentile(heartTimes, 0.5), percentile(heartTimes, 0.99), hearts))
        print("  synced copy \(copy.count / 1024) KiB, rewritten: \(rewritten ? "yes" : "no"); queue after: "
            + "\(queueBytes / 1024) KiB; journal after: \(journalBytes / 1024) KiB")
        print(String(format: "  encoding and saving the whole copy (what an echo used to cost): median %.2f ms",
                     percentile(wholeCopyTimes, 0.5)))
    }

    /// Waits for `itemId`'s change on the stream: by then the copy has it (it is applied before it is told).
    private func echo(of itemId: String, from stream: inout AsyncStream<LiveChange>.Iterator?) async throws {
        while let event = await stream?.next() {
            if case .changed(let change) = event, change.itemId == itemId { return }
            if case .disconnected(let error, _) = event { throw ValidationError("the live stream dropped: \(error)") }
        }
        throw ValidationError("the live stream ended")
    }

    private static func favorites(_ count: Int) -> [Favorite] {
        (0..<count).map { index in
            Favorite(item: CatalogItem(id: "SK-\(index)", experience: .rijksmuseum,
                                       title: "A painting of some length, number \(index)", subtitle: "A painter, 1642",
                                       imageURL: "https://lh3.googleusercontent.com/\(index)=s400"),
                     favoritedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)), version: Int64(index + 1))
        }
    }

    /// The copy as a sync leaves it (the client's document format 2), at the position of its last favorite.
    private func syncedCopy(of favorites: [Favorite]) throws -> Data {
        struct Copy: Encodable {
            var format = 2
            var version: Int64
            var favorites: [String: [String: Favorite]]
        }
        let byId = Dictionary(favorites.map { ($0.item.id, $0) }) { first, _ in first }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(Copy(version: Int64(favorites.count), favorites: ["rijksmuseum": byId]))
    }

    /// The CPU time the process has used, all threads, in seconds: what a heart costs the device, without the time
    /// its threads spend waiting (for a timer, a socket, another thread).
    private static func processCPUTime() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
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
