import Contracts
@testable import FavoriteMeClient
import Foundation

/// Users, sessions and favorites as the tests need them.
enum Fixture {
    static func user(_ name: String = "someone", id: UUID = UUID()) -> UserProfile {
        UserProfile(id: id, email: "\(name)@example.com", experience: .rijksmuseum, preferences: [:],
                    createdAt: Date(timeIntervalSince1970: 1_700_000_000))
    }

    static func session(_ user: UserProfile, refreshToken: String = "refresh-1", expired: Bool = false) -> StoredSession {
        StoredSession(accessToken: "access-\(refreshToken)", refreshToken: refreshToken,
                      accessTokenExpiresAt: Date(timeIntervalSinceNow: expired ? -60 : 3600), user: user)
    }

    static func authSession(_ user: UserProfile, refreshToken: String) -> AuthSession {
        AuthSession(user: user, accessToken: "access-\(refreshToken)", refreshToken: refreshToken, expiresIn: 900,
                    sessionId: UUID())
    }

    static func favorite(_ itemId: String, at seconds: Double = 0, version: Int64 = 1) -> Favorite {
        Favorite(item: CatalogItem(id: itemId, experience: .rijksmuseum, title: "Title \(itemId)"),
                 favoritedAt: Date(timeIntervalSince1970: 1_700_000_000 + seconds), version: version)
    }
}

/// The favorites part of the API for one user, as the stub server answers it: writes applied once per
/// `Idempotency-Key`, the changes feed, and whatever else `fallback` answers.
final class FakeAccount: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock` only.
    private let lock = NSLock()
    private var changes: [FavoriteChange] = []
    private var answered: [String: StubAnswer] = [:]
    /// Applied writes in order: "favorite 1", "unfavorite 1", "clear".
    private var appliedWrites: [String] = []

    var applied: [String] { lock.withLock { appliedWrites } }
    var version: Int64 { lock.withLock { Int64(changes.count) } }

    /// Adds a change as another device would make it.
    func add(_ itemId: String) {
        lock.withLock { record(.added, itemId) }
    }

    private func record(_ kind: FavoriteChange.Kind, _ itemId: String?) {
        let version = Int64(changes.count + 1)
        changes.append(FavoriteChange(version: version, kind: kind, experience: .rijksmuseum, itemId: itemId,
                                      at: Date(timeIntervalSince1970: 1_700_000_000 + Double(version)),
                                      favorite: kind == .added ? itemId.map { Fixture.favorite($0, version: version) } : nil))
    }

    /// The answer to `request` when it is one of the favorites routes; nil otherwise.
    func answer(_ request: StubRequest) -> StubAnswer? {
        lock.withLock {
            if request.method == "GET", request.path == "/v1/favorites/changes" {
                let since = Int(request.query["since"] ?? "0") ?? 0
                let page = Array(changes.dropFirst(since))
                return .json(FavoriteChanges(changes: page, version: Int64(changes.count), hasMore: false))
            }
            let segments = request.path.split(separator: "/").map(String.init)  // v1 favorites rijksmuseum ID
            guard segments.count >= 2, segments[1] == "favorites", request.method != "GET" else { return nil }
            if let key = request.header("Idempotency-Key"), let earlier = answered[key] { return earlier }
            let answer: StubAnswer
            switch (request.method, segments.count) {
            case ("PUT", 4):
                appliedWrites.append("favorite \(segments[3])")
                record(.added, segments[3])
                answer = .json(Fixture.favorite(segments[3]), status: 201)
            case ("DELETE", 4):
                appliedWrites.append("unfavorite \(segments[3])")
                record(.removed, segments[3])
                answer = .noContent
            case ("DELETE", 2):
                appliedWrites.append("clear")
                record(.cleared, nil)
                answer = .noContent
            default:
                return nil
            }
            if let key = request.header("Idempotency-Key") { answered[key] = answer }
            return answer
        }
    }
}
