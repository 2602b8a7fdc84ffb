import Contracts
import Foundation
@testable import FavoritesService
import Testing

/// A batch's effect, set-wise, against the same events applied one by one (the model below).
@Suite struct BatchEffectTests {
    static let ana = UUID(), ben = UUID()

    static func added(_ item: String, _ title: String = "T", in experience: String = "mobiles", written: Bool? = nil)
        -> FavoriteEvent
    {
        var snapshot = FavoriteSnapshot(item: CatalogItem(id: item, experience: ExperienceID(rawValue: experience),
                                                          title: title))
        snapshot.written = written
        return written == true ? .cardWritten(snapshot) : .added(snapshot)
    }

    /// The favorites the events leave, applied one by one as the inline view does (an add of a kept one does nothing).
    static func oneByOne(_ events: [(user: UUID, event: FavoriteEvent)], start: Set<String> = []) -> Set<String> {
        var kept = start
        for (user, event) in events {
            switch event {
            case .added(let item), .cardWritten(let item): kept.insert("\(user) \(item.experience) \(item.itemId)")
            case .removed(let experience, let itemId): kept.remove("\(user) \(experience) \(itemId)")
            case .cleared(let experience): kept = kept.filter { !$0.hasPrefix("\(user) \(experience.rawValue) ") }
            case .erased: kept = kept.filter { !$0.hasPrefix("\(user) ") }
            case .confirmed: break
            }
        }
        return kept
    }

    /// The same, from the batch's effect: the removals on what was there, then the additions.
    static func setWise(_ events: [(user: UUID, event: FavoriteEvent)], start: Set<String> = []) -> Set<String> {
        let effect = BatchEffect(events.enumerated().map { ($1.user, $1.event, Int64($0 + 1), Date()) })
        var kept = start.filter { row in
            !effect.removals.contains { removal in
                row.hasPrefix("\(removal.user) ") && (removal.kind == "erased"
                    || row.hasPrefix("\(removal.user) \(removal.experience ?? "") ")
                        && (removal.kind == "cleared" || row == "\(removal.user) \(removal.experience ?? "") \(removal.itemId ?? "")"))
            }
        }
        for addition in effect.additions {
            kept.insert("\(addition.user) \(addition.favorite.experience) \(addition.favorite.itemId)")
        }
        return kept
    }

    @Test func removalsAndReAddsInOneBatchEndAsOneByOne() {
        let events: [(user: UUID, event: FavoriteEvent)] = [
            (Self.ana, Self.added("1")), (Self.ana, Self.added("2")), (Self.ana, .removed(experience: .mobiles, itemId: "1")),
            (Self.ben, Self.added("1")), (Self.ana, .cleared(experience: .mobiles)), (Self.ana, Self.added("3")),
            (Self.ben, .erased), (Self.ben, Self.added("4")), (Self.ana, Self.added("2", in: "flashcards")),
            (Self.ana, Self.added("3")),
        ]
        let start: Set = ["\(Self.ana) mobiles 9", "\(Self.ben) mobiles 8", "\(Self.ana) flashcards 7"]
        #expect(Self.setWise(events, start: start) == Self.oneByOne(events, start: start))
        #expect(Self.setWise(events, start: start) == [
            "\(Self.ana) mobiles 3", "\(Self.ben) mobiles 4", "\(Self.ana) flashcards 2", "\(Self.ana) flashcards 7",
        ])
    }

    @Test func theFirstAddAfterTheLastRemovalIsTheOneKept() {
        let effect = BatchEffect([
            (Self.ana, Self.added("1", "first"), 1, Date()), (Self.ana, .removed(experience: .mobiles, itemId: "1"), 2, Date()),
            (Self.ana, Self.added("1", "second"), 3, Date()), (Self.ana, Self.added("1", "third"), 4, Date()),
        ])
        #expect(effect.additions.map(\.favorite.title) == ["second"])
        #expect(effect.additions.map(\.version) == [3])
        #expect(effect.removals.count == 1)
        #expect(effect.latestAdds.map(\.title) == ["third"])  // the title everyone's popular list shows
    }

    @Test func writtenCardsAreKeptButNeverShownToOthers() {
        let effect = BatchEffect([(Self.ana, Self.added("own-1", in: "flashcards", written: true), 1, Date())])
        #expect(effect.additions.count == 1)
        #expect(effect.latestAdds.isEmpty)
    }

    /// Random batches: whatever the mix, set-wise equals one by one.
    @Test(arguments: 0..<50)
    func randomBatchesMatchOneByOne(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed + 1))
        let users = [Self.ana, Self.ben]
        let events: [(user: UUID, event: FavoriteEvent)] = (0..<30).map { _ in
            let user = users[Int.random(in: 0...1, using: &generator)]
            let item = String(Int.random(in: 1...4, using: &generator))
            let experience = ["mobiles", "flashcards"][Int.random(in: 0...1, using: &generator)]
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5: return (user, Self.added(item, in: experience))
            case 5..<8: return (user, .removed(experience: ExperienceID(rawValue: experience), itemId: item))
            case 8: return (user, .cleared(experience: ExperienceID(rawValue: experience)))
            default: return (user, .erased)
            }
        }
        let start: Set = ["\(Self.ana) mobiles 1", "\(Self.ben) flashcards 2"]
        #expect(Self.setWise(events, start: start) == Self.oneByOne(events, start: start))
    }
}

/// A small deterministic generator (SplitMix64) for repeatable random tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
