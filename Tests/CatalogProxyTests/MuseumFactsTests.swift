@testable import CatalogProxy
import Contracts
import Foundation
@testable import ReplayUpstream
import Testing

/// What the replay's stand-in artworks give a detail, read through the proxy's own decoder: the figures docs/api.md
/// states beside the real captures' (``LinkedArtDecodingTests``).
@Suite struct MuseumFactsTests {
    @Test func everyStandInIsDatedFromItsLegacyRecordingAndNoneHasADescription() throws {
        let museum = try RijksmuseumFixtures(root: Fixtures.root)
        let standIns = museum.pool.filter { !RijksmuseumFixtures.capturedObjects.contains($0.number) }
        #expect(standIns.count == 144)  // the legacy recordings' 145 artworks less the Night Watch, captured for real
        let source = RijksmuseumSource()
        for entry in standIns {
            let record = try LinkedArt.object(try #require(museum.records[entry.number]))
            let item = source.item(record, number: try #require(record.objectNumber), maker: record.maker, image: nil)
            #expect(item.artwork?.dating != nil && item.artwork?.year != nil, "\(entry.objectNumber)")
            #expect(item.artwork?.plaqueDescription == nil, "\(entry.objectNumber)")
        }
        // The list entry's language: `ca.` is Dutch, and so tagged, so an English reader falls back to it.
        let bride = try #require(standIns.first { $0.objectNumber == "sk-c-216" })
        let record = try LinkedArt.object(try #require(museum.records[bride.number]))
        #expect(record.dutchDating == "ca. 1665 - ca. 1669" && record.englishDating == nil)
        #expect(record.yearEarly == 1665 && record.yearLate == 1669)
    }
}
