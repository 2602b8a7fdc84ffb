import Configuration
import EventStore
import Foundation
import Logging
import Postgres
import ServiceKit

/// The views `favorites-service rebuild` can rebuild from the log.
public enum RebuildableView: String, CaseIterable, Sendable {
    /// The per-user favorites (kept inline by every write).
    case favorites
    /// The most favorited items per experience (kept by the async projection).
    case popular
}

public enum RebuildError: Error, CustomStringConvertible {
    case userRepairNeedsFavoritesView

    public var description: String {
        "--user repairs one user's favorites view; the popular view can only be rebuilt whole"
    }
}

/// Rebuilds `view` from the event log while the service keeps running (blue/green: new tables, then a switch), or
/// with `user`, rebuilds that one user's favorites for repair. Returns a one-line report.
public func rebuild(view: RebuildableView, user: UUID?, reader: ConfigReader) async throws -> String {
    var configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    // One session at a time, and time enough to wait for the event table's lock at the switch-over.
    configuration.database.statementTimeout = .seconds(600)
    let pool = DatabasePool(connection: configuration.database,
                            pool: PoolConfiguration(size: 1, leaseTimeout: .seconds(30), queryTimeout: nil))
    let logger = {
        var logger = Logger(label: "favorites-service.rebuild")
        logger.logLevel = configuration.logLevel
        return logger
    }()
    return try await pool.closing { pool in
        switch (view, user) {
        case (.favorites, let user?):
            let events = try await FavoritesView.repair(user: user, pool: pool)
            return "repaired the favorites of user \(user.uuidString.lowercased()) from \(events) events"
        case (.favorites, nil):
            let events = try await ProjectionRebuild.rebuild(FavoritesView(), mode: .inline, pool: pool, logger: logger)
            return "rebuilt the favorites view from \(events) events"
        case (.popular, nil):
            let events = try await ProjectionRebuild.rebuild(MostFavorited(), mode: .async, pool: pool, logger: logger)
            return "rebuilt the popular view from \(events) events"
        case (.popular, .some):
            throw RebuildError.userRepairNeedsFavoritesView
        }
    }
}
