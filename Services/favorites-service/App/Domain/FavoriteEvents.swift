import Contracts
import EventStore
import Foundation

/// The events of a user's favorites stream, as stored (type name, schema version, JSON payload).
enum FavoriteEvent: Equatable, Sendable {
    case added(FavoriteSnapshot)
    case removed(experience: ExperienceID, itemId: String)
    case cleared(experience: ExperienceID)
    /// A favorite sent with an `Idempotency-Key` found the item a favorite already (since `favoritedAt`): nothing
    /// changes, but the answer it gave is kept, so that its retry gets that answer again rather than favoriting the
    /// item anew once it has been unfavorited elsewhere.
    case confirmed(FavoriteSnapshot, favoritedAt: Date, version: Int64?)
    /// The user wrote a card of their own (a flash card): kept among their favorites like a saved one.
    case cardWritten(FavoriteSnapshot)
    /// The account was deleted and its events erased; only this tombstone remains.
    case erased

    static let addedType = "favorite-added"
    static let cardWrittenType = "card-written"
    static let removedType = "favorite-removed"
    static let clearedType = "favorites-cleared"
    static let confirmedType = "favorite-confirmed"

    var type: String {
        switch self {
        case .added: Self.addedType
        case .removed: Self.removedType
        case .cleared: Self.clearedType
        case .confirmed: Self.confirmedType
        case .cardWritten: Self.cardWrittenType
        case .erased: EventStore.streamErasedType
        }
    }

    /// What is stored of the event: its type's payload, version 1.
    var payload: any Encodable & Sendable {
        switch self {
        case .added(let snapshot), .cardWritten(let snapshot): snapshot
        case .removed(let experience, let itemId): Removed(experience: experience.rawValue, itemId: itemId)
        case .cleared(let experience): Cleared(experience: experience.rawValue)
        case .confirmed(let snapshot, let favoritedAt, let version):
            Confirmed(favorite: snapshot, favoritedAt: favoritedAt.timeIntervalSince1970, version: version)
        case .erased: preconditionFailure("only EventStore.erase writes the tombstone")
        }
    }

    /// The payload of each type, version 1.
    struct Removed: Codable, Equatable { var experience: String; var itemId: String }
    struct Cleared: Codable, Equatable { var experience: String }
    /// `favoritedAt` in seconds since 1970: JSON's ISO 8601 dates would drop the microseconds the view keeps.
    /// `version`: the favorite's (its adding event's); absent from confirmations recorded before it was kept.
    struct Confirmed: Codable, Equatable {
        var favorite: FavoriteSnapshot
        var favoritedAt: Double
        var version: Int64?
    }

    /// Reads a stored event, upcasting older schema versions (none yet: every type is at version 1). Unknown types
    /// and versions are nil, so a newer writer's events never break an older reader.
    static func decode(type: String, schemaVersion: Int, data: Data) -> FavoriteEvent? {
        guard schemaVersion == 1 else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601  // as the event store writes them (an event's start, in `item`)
        switch type {
        case addedType:
            // Titles recorded before they were kept short are shortened when read, so a rebuilt view holds them short.
            return (try? decoder.decode(FavoriteSnapshot.self, from: data)).map { snapshot in
                var shortened = snapshot.sized
                shortened.title = FavoriteSnapshot.shortened(snapshot.title)
                return .added(shortened)
            }
        case removedType:
            return (try? decoder.decode(Removed.self, from: data)).map {
                .removed(experience: ExperienceID(rawValue: $0.experience), itemId: $0.itemId)
            }
        case clearedType:
            return (try? decoder.decode(Cleared.self, from: data)).map {
                .cleared(experience: ExperienceID(rawValue: $0.experience))
            }
        case confirmedType:
            return (try? decoder.decode(Confirmed.self, from: data)).map {
                .confirmed($0.favorite.sized, favoritedAt: Date(timeIntervalSince1970: $0.favoritedAt),
                           version: $0.version)
            }
        case cardWrittenType:
            // Cards recorded before their item said that the user wrote them say it when read, as the view's rows
            // do since migration 15: a rebuilt view holds what the live one holds.
            return (try? decoder.decode(FavoriteSnapshot.self, from: data)).map { snapshot in
                var read = snapshot.sized
                read.item?.card?.writtenByUser = true
                return .cardWritten(read)
            }
        case EventStore.streamErasedType: return .erased
        default: return nil
        }
    }

    /// The event as a projection applies it: nil for a type this service does not keep (it changes no view), and an
    /// error for one of its own types that it cannot read (a schema version from a newer release, during a rolling
    /// deploy). The error fails the projection's batch, so the checkpoint stays before the event until a replica
    /// that can read it applies it: skipping it would lose it from the view for good.
    init?(_ recorded: RecordedEvent) throws {
        guard let event = Self.decode(type: recorded.type, schemaVersion: recorded.schemaVersion,
                                      data: Data(recorded.data.utf8))
        else {
            guard !Self.typesTheViewsNeed.contains(recorded.type) else {
                throw Unreadable(type: recorded.type, schemaVersion: recorded.schemaVersion, position: recorded.position)
            }
            return nil
        }
        self = event
    }

    /// The types that change the views (the tombstone of an erasure too): one the projections cannot read stops them.
    /// `favorite-confirmed` changes nothing, so a version of it they cannot read is skipped.
    static let typesTheViewsNeed: Set<String> = [addedType, removedType, clearedType, cardWrittenType,
                                                  EventStore.streamErasedType]

    struct Unreadable: Error, CustomStringConvertible {
        var type: String
        var schemaVersion: Int
        var position: Int64
        var description: String {
            "event \(position) of type \(type) at schema version \(schemaVersion) cannot be read by this release"
        }
    }
}

/// What a favorite stores about its item: taken from catalog-proxy when favorited, never refreshed.
struct FavoriteSnapshot: Codable, Equatable, Sendable {
    var experience: String
    var itemId: String
    var title: String
    var subtitle: String?
    var imageURL: String?
    var price: Double?
    var rating: Double?
    /// Events only: when it is, at the venue. Absent from events recorded before they were kept (read as nil).
    var localDate: String?
    var localTime: String?
    /// Books: the rank on the list it was saved from.
    var rank: Int?
    /// Cards: the facts on the back.
    var facts: [String]?
    /// A card the user wrote (its item says so too, ``CardFacts/writtenByUser``, except in events recorded before it
    /// did: ``cellItem`` adds it).
    var written: Bool?
    /// The item as a list cell shows it (catalog-proxy's `view=cell`), in the catalog's shape. Absent from events
    /// recorded before it was kept: ``cellItem`` then rebuilds what the fields above say.
    var item: CatalogItem?

    /// Titles are kept to this many Unicode scalars: a title sort's page cursor carries the last title, and must fit
    /// in a URL (``FavoritePageCursor/maximumLength``).
    static let maximumTitleScalars = 300
}

extension FavoriteSnapshot {
    /// What each kind's list cell needs: the item as its cell shows it (`item`, from catalog-proxy's `view=cell`), and
    /// the fields lists sort and filter on: an event's date, a phone's price and rating, a book's rank, a card's facts.
    init(item: CatalogItem) {
        self.item = item
        self.item?.title = Self.shortened(item.title)
        experience = item.experience.rawValue
        itemId = item.id
        title = Self.shortened(item.title)
        subtitle = item.subtitle
        imageURL = item.imageURL
        // The lowest price any range lists: what "sort by price" means for an event.
        price = item.event?.priceRanges?.compactMap { $0.min ?? $0.max }.min() ?? item.phone?.price
        rating = item.phone?.rating
        localDate = item.event?.localDate
        localTime = item.event?.localTime
        rank = item.book?.rank
        facts = item.card?.facts
    }

    /// A card the user wrote, with the id the server gave it.
    init(card: Card, experience: ExperienceID, itemId: String) {
        self.experience = experience.rawValue
        self.itemId = itemId
        title = card.title
        facts = card.facts
        written = true
        item = CatalogItem(id: itemId, experience: experience, title: card.title,
                           card: CardFacts(facts: card.facts, writtenByUser: true))
    }

    /// The item in the catalog's shape: as kept, or for a favorite recorded before it was kept, what the fields say
    /// (nothing invented: a fact the snapshot did not keep stays absent). A card the user wrote says so.
    var cellItem: CatalogItem {
        var cell = item ?? fieldsItem
        if written == true { cell.card?.writtenByUser = true }
        return cell
    }

    /// What the fields say of the item.
    private var fieldsItem: CatalogItem {
        let experience = ExperienceID(rawValue: experience)
        var rebuilt = CatalogItem(id: itemId, experience: experience, title: title, subtitle: subtitle,
                                  imageURL: imageURL)
        switch Experience.named(experience)?.itemKind {
        case .phone?: rebuilt.phone = PhoneFacts(brand: nil, description: nil, price: price, rating: rating)
        case .book?:
            rebuilt.book = BookFacts(author: subtitle, category: nil, rank: rank, rankLastWeek: nil, weeksOnList: nil,
                                     description: nil, publisher: nil, isbn13: nil, isbn10: nil, buyURL: nil)
        case .card?: rebuilt.card = CardFacts(facts: facts ?? [])
        case .event? where localDate != nil:
            rebuilt.event = EventFacts(localDate: localDate, localTime: localTime, startsAt: nil, timeZone: nil,
                                       dateTBA: false, dateTBD: false, timeTBA: false, noSpecificTime: false,
                                       status: nil, venue: nil, priceRanges: nil, ticketURL: nil, info: nil)
        default: break
        }
        return rebuilt
    }

    /// `title` cut to at most ``maximumTitleScalars`` scalars, between two characters (an emoji or a letter with its
    /// accents stays whole), with an ellipsis when cut.
    static func shortened(_ title: String) -> String {
        guard title.unicodeScalars.count > maximumTitleScalars else { return title }
        var kept = ""
        var scalars = 1  // the ellipsis
        for character in title {
            scalars += character.unicodeScalars.count
            guard scalars <= maximumTitleScalars else { break }
            kept.append(character)
        }
        return kept + "…"
    }
}

extension FavoriteSnapshot {
    /// The snapshot with its pictures at a cell's size.
    ///
    /// Favorites recorded before the catalog sized the museum's Google-hosted pictures keep `=s0` (the original,
    /// several megabytes) in their events. The log is append-only and says what the catalog answered then, so the
    /// events stay as they are: the size is set where an event is read (a rebuilt view, the changes feed, the stream, a
    /// retry's answer), as titles recorded long are shortened when read. The view's rows were sized once, by the same
    /// rule (migration 14, `cell_sized_favorites`), so the list serves its stored item as it is.
    var sized: FavoriteSnapshot {
        var sized = self
        sized.imageURL = imageURL.map(SizedImage.cell)
        sized.item?.imageURL = item?.imageURL.map(SizedImage.cell)
        return sized
    }
}

extension Favorite {
    /// The favorite a snapshot becomes when favorited at `date` by the event of `version`.
    init(_ snapshot: FavoriteSnapshot, favoritedAt date: Date, version: Int64) {
        self.init(item: snapshot.cellItem, favoritedAt: date, version: version)
    }
}

extension FavoriteChange {
    /// The change a stored event made, as the changes feed and the change stream describe it; nil for an event that
    /// changed nothing a device shows (a confirmed favorite, an erasure) or that this release cannot read.
    init?(_ event: RecordedEvent) {
        switch FavoriteEvent.decode(type: event.type, schemaVersion: event.schemaVersion, data: Data(event.data.utf8)) {
        case .added(let item), .cardWritten(let item):
            self.init(version: event.version, kind: .added, experience: ExperienceID(rawValue: item.experience),
                      itemId: item.itemId, at: event.recordedAt,
                      favorite: Favorite(item, favoritedAt: event.recordedAt, version: event.version))
        case .removed(let experience, let itemId):
            self.init(version: event.version, kind: .removed, experience: experience, itemId: itemId,
                      at: event.recordedAt)
        case .cleared(let experience):
            self.init(version: event.version, kind: .cleared, experience: experience, itemId: nil, at: event.recordedAt)
        case .confirmed, .erased, nil:
            return nil
        }
    }
}
