import AsyncHTTPClient
import Contracts
import EventStore
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import ServiceKit
import ServiceLifecycle

/// Erases the favorites of deleted accounts. auth-service records each deletion in the same transaction as the
/// deletion itself (its outbox) and lists them; this service polls the list and erases each user's stream and view,
/// then moves its checkpoint. Erasing is idempotent, so every poll re-reads a few minutes before the checkpoint:
/// a deletion whose transaction committed late (with an earlier time) is still seen, and a crash between erasing and
/// moving the checkpoint only means erasing again.
struct AccountErasure: Service {
    let authURL: String
    let peerSecret: PeerSecret
    let httpClient: HTTPClient
    let pool: DatabasePool
    let interval: Duration
    let logger: Logger
    /// How far before the checkpoint each poll starts again.
    static let overlap: TimeInterval = 300

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)  // first wait: the migrations run while services start
                guard !Task.isCancelled else { return }
                do {
                    try await poll()
                } catch where !Task.isCancelled {
                    logger.warning("cannot apply account deletions yet; retrying", metadata: ["error": "\(error)"])
                } catch {
                    return  // shutting down
                }
            }
        }
    }

    /// Erases every account deleted since a little before the checkpoint, page after page, moving the checkpoint
    /// after each page.
    func poll() async throws {
        let checkpoint = try await pool.query("SELECT deleted_since FROM erasure_checkpoint").scalar(Date.self)
        var since = max(checkpoint.addingTimeInterval(-Self.overlap), Date(timeIntervalSince1970: 0))
        var after: UUID?
        while true {
            let page = try await deletions(since: since, after: after)
            for account in page {
                let removed = try await Self.erase(user: account.userId, pool: pool)
                if removed > 0 {
                    logger.notice("favorites erased for a deleted account", metadata: [
                        "user_id": "\(account.userId)", "events": "\(removed)",
                    ])
                }
            }
            if let latest = page.map(\.deletedAt).max() {
                try await pool.query("""
                    UPDATE erasure_checkpoint SET deleted_since = greatest(deleted_since, \(latest)::timestamptz)
                    """)
            }
            // Until a page comes back empty (not merely short: the feed's page size is auth-service's to choose), the
            // next one starts after the last entry.
            guard let last = page.last else { return }
            (since, after) = (last.deletedAt, last.userId)
        }
    }

    /// One page of auth-service's feed of deleted accounts.
    private func deletions(since: Date, after: UUID?) async throws -> [DeletedAccounts.Entry] {
        var url = authURL.trimmingSuffix("/") + "/v1/auth/deleted-accounts?since=" + PeerSecret.since(since)
        if let after { url += "&after=" + after.uuidString.lowercased() }
        return try await peerSecret.page(DeletedAccounts.self, at: url, httpClient: httpClient).accounts
    }

    /// Removes the user's events (audited) and view rows in one transaction. Returns how many events went.
    static func erase(user: UUID, pool: DatabasePool) async throws -> Int {
        try await pool.withTransaction { connection in
            // The stream lock first (before any write), then the view, then the log: the order every writer follows.
            let stream = FavoritesStore.stream(of: user)
            try await EventStore.lock(stream, on: connection)
            try await connection.query("DELETE FROM favorites WHERE user_id = \(user)")
            return try await EventStore.erase(stream, reason: "account deleted", on: connection)
        }
    }
}
