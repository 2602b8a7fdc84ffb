#if canImport(Observation)
import Contracts
@testable import FavoriteMeClient
import Foundation
import Testing

/// The observable model a SwiftUI screen binds to (Observation builds on Linux too, so it is tested here).
@MainActor @Suite struct FavoritesModelTests {
    static let user = Fixture.user()

    /// Waits until `condition` holds (the model follows the client's events a moment after they happen).
    func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<500 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the model did not get there within 5 s")
    }

    @Test func aHeartShowsAtOnceAndAnOutageShowsAsOffline() async throws {
        let account = FakeAccount()
        let down = Locked(true)
        let stub = StubServer { request in down.value ? .fail(.notConnectedToInternet) : account.answer(request) ?? .noContent }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)),
                              policy: RetryPolicy(firstDelay: 60, longestDelay: 60))
        _ = try await app.restoreSession()
        let model = FavoritesModel(client: app, experience: .rijksmuseum)
        await model.toggleHeart("SK-C-5")
        #expect(model.hearts == ["SK-C-5"] && model.pendingWrites == 1)
        #expect(model.lastError == nil)  // waiting for the network is not an error
        #expect(model.isOffline && model.writesWaitForNetwork)

        down.set(false)
        await model.sendNow()
        #expect(model.pendingWrites == 0 && !model.isOffline)
        #expect(account.applied == ["favorite SK-C-5"])
        await model.toggleHeart("SK-C-5")
        #expect(model.hearts.isEmpty && account.applied == ["favorite SK-C-5", "unfavorite SK-C-5"])
    }

    @Test func aRefusedHeartRollsBackAndSaysWhy() async throws {
        let stub = StubServer { _ in .problem(404, .notFound, "This object left the collection.") }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)))
        _ = try await app.restoreSession()
        let model = FavoritesModel(client: app, experience: .rijksmuseum)
        await model.toggleHeart("SK-GONE")
        #expect(model.hearts.isEmpty && model.pendingWrites == 0)
        #expect(model.lastError?.errorDescription == "This object left the collection.")
    }

    @Test(.timeLimit(.minutes(1))) func aCancelledSyncIsNoError() async throws {
        let stub = StubServer { _ in .hang }
        let app = stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)))
        let model = FavoritesModel(client: app, experience: .rijksmuseum)
        let pull = Task { await model.sync() }
        while stub.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        pull.cancel()
        await pull.value
        #expect(model.lastError == nil)
    }

    /// Started from a screen's `.task`: the user, their favorites and the live stream; when another user signs in,
    /// the first one's stream ends and the new user's starts (the model never waits on a stream that is over).
    @Test(.timeLimit(.minutes(1))) func itFollowsTheSessionAndEachUsersLiveChanges() async throws {
        let server = LiveChangesTests.StreamServer()
        server.account.add("SK-A")
        let app = server.stub.client(tokens: MemoryTokenStore(Fixture.session(Self.user)))
        let model = FavoritesModel(client: app, experience: .rijksmuseum)
        let screen = Task { await model.start() }
        defer { screen.cancel() }
        try await eventually { model.user == Self.user && model.connection == .live }

        _ = try await app.syncFavorites()
        try await eventually { model.favorites.map(\.item.id) == ["SK-A"] }
        let streamsBefore = server.stub.requests("GET", "/v1/favorites/stream").count
        try await app.signIn(email: server.other.email, password: "a password")
        try await eventually { model.user == server.other }
        try await eventually { server.stub.requests("GET", "/v1/favorites/stream").count > streamsBefore }
        try await eventually { model.connection == .live }
        #expect(server.stub.requests("GET", "/v1/favorites/stream").last?.header("Authorization")
                == "Bearer access-other-1")
    }

    @Test func theLiveStreamsStateIsTheConnection() {
        let model = FavoritesModel(client: StubServer { _ in .hang }.client(), experience: .rijksmuseum)
        #expect(model.connection == .idle && !model.isOffline)
        model.apply(.disconnected(.offline("no network"), retryIn: .seconds(4)))
        #expect(model.connection == .offline(retryIn: .seconds(4)) && model.isOffline)
        model.apply(.connected)
        #expect(model.connection == .live && !model.isOffline)
    }
}
#endif
