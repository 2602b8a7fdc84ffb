import Foundation

/// Which catalog a user browses. A string, not an enum, so a client built before a new experience existed can still
/// decode it; ``Experience/all`` lists the ones this version knows.
public struct ExperienceID: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let ticketmaster = ExperienceID(rawValue: "ticketmaster")
    public static let rijksmuseum = ExperienceID(rawValue: "rijksmuseum")
}

/// An experience as the app presents it (picker, navigation titles, search bar).
public struct Experience: Codable, Sendable, Equatable, Identifiable {
    public var id: ExperienceID
    /// Shown in the experience picker.
    public var displayName: String
    /// Plural noun for navigation titles ("Events", "Artworks").
    public var itemNoun: String
    /// Placeholder for the search bar.
    public var searchHint: String

    public init(id: ExperienceID, displayName: String, itemNoun: String, searchHint: String) {
        self.id = id
        self.displayName = displayName
        self.itemNoun = itemNoun
        self.searchHint = searchHint
    }

    /// Every experience this version of the backend serves, in picker order.
    public static let all: [Experience] = [
        Experience(id: .ticketmaster, displayName: "Ticketmaster", itemNoun: "Events",
                   searchHint: "Search events by city"),
        Experience(id: .rijksmuseum, displayName: "Rijksmuseum", itemNoun: "Artworks",
                   searchHint: "Search artworks by name"),
    ]

    /// The experience with this id, if this version knows it.
    public static func named(_ id: ExperienceID) -> Experience? { all.first { $0.id == id } }
}

/// The body of `GET /v1/catalog/experiences`.
public struct ExperienceList: Codable, Sendable, Equatable {
    public var experiences: [Experience]
    public init(experiences: [Experience]) { self.experiences = experiences }
}
