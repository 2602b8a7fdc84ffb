import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// What an app developer expects of the client: a lost refresh answer recovered, cancellation as CancellationError,
/// errors a user can read, a log of every request without its secrets, background time for work begun in the
/// foreground.
@Suite struct ClientBehaviourTests {
    static let user = Fixture.user()

    /// Records what was run as background work.
    final class ActivityLog: BackgroundActivity, @unchecked Sendable {
        // @unchecked: `names` is only touched under `lock`.
        private let lock = NSLock()
        private var names: [String] = []
        var ran: [String] { lock.withLock { names } }

        func run<Result: Sendable>(_ name: String, _ work: @escaping @Sendable () async -> Result) async -> Result {
            lock.withLock { names.append(name) }
            return await work()
        }
    }

    /// A refresh whose answer is lost (the app suspended as it came) is tried again, after a relaunch even, with the
    /// same refresh token and the same key, which the server answers with the same successor instead of reuse.
    @Test func aLostRefreshAnswerIsRetriedWithTheSameKey() async throws {
        let stale = Fixture.session(Self.user, refreshToken: "r1", expired: true)
        let tokens = MemoryTokenStore(stale)
        let firstKey = Locked<String?>(nil)
        let stub = StubServer { request in
            switch request.path {
            case "/v1/auth/refresh":
                let key = request.header("Idempotency-Key")
                guard let first = firstKey.value else {
                    firstKey.set(key)
                    return .fail(.networkConnectionLost)  // the server rotated; the answer never arrived
                }
                let token = (try? JSONDecoder().decode(RefreshRequest.self, from: request.body ?? Data()))?.refreshToken
                return key == first && token == "r1" ? .json(Fixture.authSession(Self.user, refreshToken: "r2"))
                    : .problem(401, .refreshTokenReused)
            case "/v1/auth/me":
                return request.header("Authorization") == "Bearer access-r2" ? .json(Self.user)
                    : .problem(401, .tokenExpired)
            default:
                return .problem(404, .notFound)
            }
        }
        let activities = ActivityLog()
        let app = stub.client(tokens: tokens, backgroundActivity: activities)
        let lost = await #expect(throws: FavoriteMeError.self) { try await app.me() }
        #expect(lost.map { if case .transport = $0 { true } else { false } } == true)
        let kept = try #require(await tokens.load())
        #expect(kept.refreshToken == "r1")
        #expect(kept.pendingRefreshKey != nil && kept.pendingRefreshKey == firstKey.value)
        #expect(activities.ran.contains("Refresh the FavoriteMe session"))

        let relaunched = stub.client(tokens: tokens)
        #expect(try await relaunched.me() == Self.user)
        let refreshed = try #require(await tokens.load())
        #expect(refreshed.refreshToken == "r2" && refreshed.pendingRefreshKey == nil)
        let keys = stub.requests("POST", "/v1/auth/refresh").map { $0.header("Idempotency-Key") }
        #expect(keys.count == 2 && Set(keys).count == 1)
    }

    /// Twenty calls at once with an expired token share one refresh (the server takes a second use of a refresh
    /// token for theft), keyed like any other.
    @Test func aBurstSharesOneRefresh() async throws {
        let stub = StubServer { request in
            switch request.path {
            case "/v1/auth/refresh": return .json(Fixture.authSession(Self.user, refreshToken: "r2"))
            default: return request.header("Authorization") == "Bearer access-r2" ? .json(Self.user)
                : .problem(401, .tokenExpired)
            }
        }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user, refreshToken: "r1", expired: true)))
        try await withThrowingTaskGroup(of: UserProfile.self) { group in
            for _ in 0..<20 { group.addTask { try await app.me() } }
            for try await user in group { #expect(user == Self.user) }
        }
        let refreshes = stub.requests("POST", "/v1/auth/refresh")
        #expect(refreshes.count == 1)
        #expect(refreshes.first?.header("Idempotency-Key")?.isEmpty == false)
    }

    /// A's write waits for A's refresh; B signs in on the device before its answer comes: A's write never goes out
    /// with either session, and stays for A's next sign-in.
    @Test(.timeLimit(.minutes(1))) func aRefreshUnderWayWhenAnotherUserSignsInIsDropped() async throws {
        let userA = Fixture.user("a")
        let userB = Fixture.user("b")
        let stub = StubServer { request in
            switch request.path {
            case "/v1/auth/refresh": return .hang  // A's answer never comes in time
            case "/v1/auth/login": return .json(Fixture.authSession(userB, refreshToken: "b-1"))
            default: return .json(Fixture.favorite("1"), status: 201)
            }
        }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(userA, expired: true)))
        _ = try await app.restoreSession()
        let writeA = Task { try await app.favorite("1", in: .rijksmuseum) }
        while stub.requests("POST", "/v1/auth/refresh").isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        try await app.signIn(email: userB.email, password: "a password")
        guard case .queued = try await writeA.value else {
            Issue.record("A's write was applied after B signed in")
            return
        }
        _ = await app.sendPendingWrites()
        #expect(stub.requests("PUT", "/v1/favorites").isEmpty)
        #expect(await app.pendingWrites().isEmpty)  // B's queue
    }

    /// A search whose task is cancelled (the user typed on) throws CancellationError, never a transport error to
    /// show; the log says it was cancelled, and never holds the search's text.
    @Test(.timeLimit(.minutes(1))) func aCancelledSearchThrowsCancellationError() async throws {
        let stub = StubServer { _ in .hang }
        let log = RequestLog()
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), log: log.record)
        let search = Task { try await app.items(in: .rijksmuseum, matching: "rembrandt night watch") }
        while stub.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        search.cancel()
        await #expect(throws: CancellationError.self) { try await search.value }
        // Cancelled before it started: no request at all.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await app.experiences()
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(stub.requests.count == 1)
        let record = try #require(log.records.first)
        #expect(record.path == "/v1/catalog/rijksmuseum/items" && record.status == nil && record.failure == "cancelled")
        #expect(!"\(log.records)".contains("rembrandt"))
    }

    /// Every request is told to the app's log hook once over: method, path, status, the request id the server
    /// filed it under, how long it took. Never a token.
    @Test func theLogHookSeesEveryRequestAndNoSecret() async throws {
        let stub = StubServer { request in
            request.path == "/v1/auth/me" ? .json(Self.user) : .problem(404, .notFound, "no such item")
        }
        let log = RequestLog()
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)), log: log.record)
        _ = try await app.me()
        _ = try? await app.item("nope", in: .rijksmuseum)
        #expect(log.records.map { "\($0.method) \($0.path) \($0.status ?? 0)" }
                == ["GET /v1/auth/me 200", "GET /v1/catalog/rijksmuseum/items/nope 404"])
        for (record, request) in zip(log.records, stub.requests) {
            #expect(record.requestId == request.header("X-Request-ID"))
            #expect(record.duration > .zero)
        }
        #expect(stub.requests.first?.header("Authorization") == "Bearer access-refresh-1")
        #expect(!"\(log.records)".contains("access-refresh-1"))
    }

    /// Errors say something a user can read, and whether the device is simply offline.
    @Test func errorsHaveUserFacingDescriptions() {
        let problem = APIProblem(ProblemDetails(type: .favoritesLimitReached, title: "Limit", status: 409,
                                                detail: "You can keep 5,000 favorites.", requestId: "r", errors: nil),
                                 retryAfter: nil)
        let cases: [FavoriteMeError] = [
            .refused(problem), .offline("-1009"), .transport("-1005"), .unexpectedAnswer(status: 200, detail: "<html>"),
            .signedOut, .storage("full"),
        ]
        for error in cases {
            let description = error.errorDescription ?? ""
            #expect(!description.isEmpty && !description.contains("-100"), "\(error)")
            #expect(error.localizedDescription == description)
        }
        #expect(FavoriteMeError.refused(problem).errorDescription == "You can keep 5,000 favorites.")
        #expect(cases.map(\.isConnectivity) == [false, true, true, true, false, false])
    }

    /// The privacy manifest is a resource of the library, so that it is in every app that links it.
    @Test func thePrivacyManifestShipsWithTheLibrary() throws {
        let url = try #require(Bundle.module.url(forResource: "PrivacyInfo", withExtension: "xcprivacy"))
        let manifest = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
            as? [String: Any])
        #expect(manifest["NSPrivacyTracking"] as? Bool == false)
        #expect((manifest["NSPrivacyAccessedAPITypes"] as? [Any])?.isEmpty == true)
        let collected = (manifest["NSPrivacyCollectedDataTypes"] as? [[String: Any]] ?? [])
            .compactMap { $0["NSPrivacyCollectedDataType"] as? String }
        #expect(collected == ["NSPrivacyCollectedDataTypeEmailAddress", "NSPrivacyCollectedDataTypeUserID",
                              "NSPrivacyCollectedDataTypeOtherUserContent"])
    }

    /// Models are Identifiable and Hashable, as SwiftUI's lists and sets want them.
    @Test func modelsAreIdentifiableAndHashable() {
        let item = CatalogItem(id: "SK-C-5", experience: .rijksmuseum, title: "The Night Watch")
        #expect(Set([item, item]).count == 1 && item.id == "SK-C-5")
        let favorite = Fixture.favorite("SK-C-5")
        #expect(favorite.id == Favorite.ID(experience: .rijksmuseum, itemId: "SK-C-5"))
        #expect(Set([favorite]).contains(favorite))
        #expect(Self.user.id == Self.user.id && Set([Self.user]).count == 1)
        func identified<T: Identifiable & Hashable>(_ value: T) -> T.ID { value.id }
        _ = identified(PopularItem(itemId: "1", title: "t", subtitle: nil, imageURL: nil, favoriteCount: 3))
        _ = identified(FavoriteChange(version: 4, kind: .removed, experience: .rijksmuseum, itemId: "1", at: Date()))
        _ = identified(PendingWrite(.clear(experience: .rijksmuseum)))
    }
}

/// A value shared by the tests' closures.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `stored` is only touched under `lock`.
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func set(_ value: Value) { lock.withLock { stored = value } }
}
