import Contracts
import Foundation

/// What the statement of a favorite or a card decided under the user's stream's lock, and what it found (see
/// FavoritesWriteStatements): the decision is SQL, so that a write is one statement; what it answers is decided here.
struct FavoriteReport: Sendable, Equatable {
    enum Outcome: String, Sendable {
        /// The request's event is in the stream already: nothing was written.
        case retry
        /// The stream is long enough for the limit to be reached: nothing was written, ask again counting.
        case countFirst = "count-first"
        case limitReached = "limit-reached"
        case titleTaken = "title-taken"
        /// The item was a favorite already; a keyed request recorded the answer
        /// (``FavoriteEvent/confirmed(_:favoritedAt:version:)``).
        case confirmed
        /// The item was a favorite already; nothing was written.
        case existing
        case added
    }

    var outcome: Outcome
    /// The title another item holds ('title-taken').
    var titleHolder: String?
    /// The favorite of the item named, when it was one.
    var kept: Favorite?
    /// The version the favorite gets ('added').
    var nextVersion: Int64
    /// The request's own event, when the stream holds it.
    var earlier: EarlierEvent?

    /// Whether the statement appended an event.
    var appended: Bool { outcome == .added || outcome == .confirmed }
}

/// A request's event found in the stream, and what the request answered then.
struct EarlierEvent: Sendable, Equatable {
    /// Nil for a type this release does not read.
    var event: FavoriteEvent?
    var recordedAt: Date
    /// Its version in the stream.
    var version: Int64

    /// What a favorite or a card answered: the favorite it added, or the one it found there already (a confirmation
    /// recorded before it kept the favorite's version answers with its own, the nearest the log says).
    var answer: Favorited? {
        switch event {
        case .added(let snapshot), .cardWritten(let snapshot):
            .created(Favorite(snapshot, favoritedAt: recordedAt, version: version))
        case .confirmed(let snapshot, let favoritedAt, let kept):
            .existing(Favorite(snapshot, favoritedAt: favoritedAt, version: kept ?? version))
        default: nil
        }
    }
}

/// What a favorite answers: 201 with a favorite it added, 200 with one that was there.
enum Favorited: Sendable, Equatable {
    case created(Favorite)
    case existing(Favorite)

    var favorite: Favorite {
        switch self {
        case .created(let favorite), .existing(let favorite): favorite
        }
    }
}

/// Why a command refuses a write; each is a problem of its own for clients (see FavoritesProblems.swift).
enum FavoritesRefusal: Error, Equatable {
    /// The user keeps as many favorites in the experience as one may.
    case limitReached(count: Int, experience: String)
    /// The user keeps an item with this title already (a card written or saved).
    case titleTaken(by: String)
    /// The catalog spells the item's id otherwise.
    case spelledOtherwise(String)
    /// The experience has no items users write.
    case noWrittenItems(String)
    /// A sync position past the end of the user's log (one kept from another account, or from before a restore):
    /// answering "nothing new" would let that device skip this account's changes for good.
    case positionAhead(of: Int64, asked: Int64)
    /// This replica holds as many change streams as it may (another may not).
    case streamsFull
    /// The user holds as many change streams on this replica as one may (`FAVORITES_STREAMS_PER_USER`).
    case tooManyStreams(Int)
}

/// What a favorite and a card answer, from what their statement reported: pure, so that every answer is tested
/// without a database (the decisions themselves are tested against PostgreSQL).
enum FavoritesCommands {
    /// The answer to a favorite of `snapshot` at `now`; nil when the statement asks to be sent again counting. A retry
    /// gets what the first request got, even if the item was removed since (an earlier event of another kind, from a
    /// key reused for another request, answers as the state does, and nothing is written).
    static func favorited(_ snapshot: FavoriteSnapshot, _ report: FavoriteReport, maximum: Int,
                          at now: Date) throws(FavoritesRefusal) -> Favorited? {
        let added = Favorited.created(Favorite(snapshot, favoritedAt: now, version: report.nextVersion))
        switch report.outcome {
        case .countFirst: return nil
        case .limitReached: throw .limitReached(count: maximum, experience: snapshot.experience)
        case .titleTaken: throw .titleTaken(by: report.titleHolder ?? snapshot.title)
        case .retry: return report.earlier?.answer ?? report.kept.map(Favorited.existing) ?? added
        case .confirmed, .existing: return report.kept.map(Favorited.existing) ?? added
        case .added: return added
        }
    }
}
