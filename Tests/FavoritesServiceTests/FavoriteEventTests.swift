@testable import EventStore
@testable import FavoritesService
import Contracts
import Foundation
import Testing

/// How the projections read the log: what they apply, skip, or refuse to skip.
@Suite struct FavoriteEventTests {
    static func recorded(type: String, schemaVersion: Int = 1, data: String) -> RecordedEvent {
        RecordedEvent(position: 7, streamID: "user-\(UUID().uuidString.lowercased())", version: 1, id: UUID(),
                      type: type, schemaVersion: schemaVersion, data: data, metadata: EventMetadata(),
                      recordedAt: Date(), transactionID: 1)
    }

    @Test func anEventOfItsOwnIsApplied() throws {
        let event = try FavoriteEvent(Self.recorded(type: FavoriteEvent.clearedType, data: #"{"experience":"ticketmaster"}"#))
        #expect(event == .cleared(experience: ExperienceID(rawValue: "ticketmaster")))
    }

    @Test func aTypeItDoesNotKeepIsSkipped() throws {
        #expect(try FavoriteEvent(Self.recorded(type: "profile-changed", data: "{}")) == nil)
    }

    /// A newer release's version of one of its own types (a rolling deploy): the batch must fail, so that the event
    /// waits for a replica that can read it instead of being skipped for good.
    @Test(arguments: [(2, #"{"experience":"ticketmaster"}"#), (1, #"{"nothing":"useful"}"#)])
    func anEventOfItsOwnThatItCannotReadStopsTheBatch(schemaVersion: Int, data: String) {
        #expect(throws: FavoriteEvent.Unreadable.self) {
            try FavoriteEvent(Self.recorded(type: FavoriteEvent.clearedType, schemaVersion: schemaVersion, data: data))
        }
    }
}
