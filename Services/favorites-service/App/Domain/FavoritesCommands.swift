import Contracts
import Foundation

/// A user's favorites of one experience as a write finds them, their stream locked: everything a command decides on,
/// read in one statement (``FavoritesStore/state(of:for:on:)``).
struct WriteState: Sendable, Equatable {
    /// The stream's version; the event a command records gets the next one.
    var version: Int64
    /// The request's own event, when the stream holds it already: the request is a retry.
    var earlier: EarlierEvent?
    /// The favorite of the item the command names, if it is one.
    var item: Favorite?
    /// How many favorites the user keeps in the experience.
    var count: Int
    /// The favorite whose title equals the command's, without case or surrounding spaces, when one was asked for.
    var titleHolder: TitleHolder?

    var isRetry: Bool { earlier != nil }

    struct TitleHolder: Sendable, Equatable {
        var itemId: String
        var title: String
    }
}

/// A request's event found in the stream, and what the request answered then.
struct EarlierEvent: Sendable, Equatable {
    /// Nil for a type this release does not read.
    var event: FavoriteEvent?
    var recordedAt: Date

    /// What a favorite or a card answered: the favorite it added, or the one it found there already.
    var answer: Favorited? {
        switch event {
        case .added(let snapshot), .cardWritten(let snapshot): .created(Favorite(snapshot, favoritedAt: recordedAt))
        case .confirmed(let snapshot, let favoritedAt): .existing(Favorite(snapshot, favoritedAt: favoritedAt))
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

/// What a command decided: the event to record (none when nothing changes) and what to answer.
struct Decision<Outcome: Sendable>: Sendable {
    var event: FavoriteEvent?
    var outcome: Outcome
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

/// The commands on a user's favorites, decided on their ``WriteState``: pure, so every rule is tested without a
/// database. A command that would change nothing records no event, and a retry (its event in the stream already)
/// never records one again.
enum FavoritesCommands {
    /// Favorites `snapshot`. A retry gets what the first request got, before any check, even if the item was removed
    /// since. A new favorite needs room (one kept already adds nothing) and, where users write items, a title no other
    /// item has. A favorite of a favorite changes nothing; with an `Idempotency-Key` its answer is recorded
    /// (``FavoriteEvent/confirmed(_:favoritedAt:)``), so that its retry gets it again.
    static func favorite(_ snapshot: FavoriteSnapshot, in state: WriteState, maximum: Int, isKeyed: Bool,
                         at now: Date) throws(FavoritesRefusal) -> Decision<Favorited> {
        if let answer = state.earlier?.answer { return Decision(event: nil, outcome: answer) }
        guard state.item != nil || state.count < maximum else {
            throw .limitReached(count: state.count, experience: snapshot.experience)
        }
        if let holder = state.titleHolder, holder.itemId != snapshot.itemId { throw .titleTaken(by: holder.title) }
        let decision: Decision<Favorited> = if let current = state.item {
            Decision(event: isKeyed ? .confirmed(FavoriteSnapshot(current), favoritedAt: current.favoritedAt) : nil,
                     outcome: .existing(current))
        } else {
            Decision(event: .added(snapshot), outcome: .created(Favorite(snapshot, favoritedAt: now)))
        }
        return state.isRetry ? Decision(event: nil, outcome: decision.outcome) : decision
    }

    /// A card the user wrote: it needs room and a title none of their items has. A retry gets the first answer.
    static func writeCard(_ snapshot: FavoriteSnapshot, in state: WriteState, maximum: Int,
                          at now: Date) throws(FavoritesRefusal) -> Decision<Favorite> {
        if let answer = state.earlier?.answer { return Decision(event: nil, outcome: answer.favorite) }
        guard state.count < maximum else { throw .limitReached(count: state.count, experience: snapshot.experience) }
        if let holder = state.titleHolder { throw .titleTaken(by: holder.title) }
        let card = Favorite(snapshot, favoritedAt: now)
        return Decision(event: state.isRetry ? nil : .cardWritten(snapshot), outcome: card)
    }

    /// Nothing to remove changes nothing, unless the request carries an `Idempotency-Key`: its event is how a retry
    /// is recognised, and a retry must not remove what was favorited after the first request.
    static func unfavorite(_ itemId: String, of experience: ExperienceID, in state: WriteState, isKeyed: Bool)
        -> FavoriteEvent?
    {
        guard !state.isRetry, state.item != nil || isKeyed else { return nil }
        return .removed(experience: experience, itemId: itemId)
    }

    /// Every favorite of one experience, in one event; as with ``unfavorite(_:of:in:isKeyed:)``, a keyed clear is
    /// recorded even when there is nothing to clear, and its retry changes nothing, even if favorites were added since.
    static func clear(_ experience: ExperienceID, in state: WriteState, isKeyed: Bool) -> FavoriteEvent? {
        guard !state.isRetry, state.count > 0 || isKeyed else { return nil }
        return .cleared(experience: experience)
    }
}
