import Foundation

/// The SCB "Mobile Phone Buyer's Guide" test API (`scb-test-mobile.herokuapp.com/api/mobiles/`), whose host is gone:
/// the replay stands in for an operator who hosts a copy of it.
///
/// The list, phone 2's detail and phone 1's images are recordings, served byte for byte. The other phones' details are
/// their entries of the list. Their images were never recorded, so each gets a stand-in gallery of one image, its
/// recorded thumbnail, with an image id of 900 plus the phone's id, above every recorded image id, so a stand-in
/// image is told apart from a recorded one at a glance.
struct MobilesFixtures: Sendable {
    static let list = "mobiles/harshil64-mobiles-list.json"
    static let details = [2: "mobiles/harshil64-mobile-2-detail.json"]
    static let images = [1: "mobiles/unidentified-repo-mobile-1-images.json"]
    /// Django REST Framework's body for a missing object, which the upstream was built with.
    static let notFound = Data(#"{"detail":"Not found."}"#.utf8)

    let listBody: Data
    /// Every phone's detail body, by id.
    let detailBodies: [Int: Data]
    /// Every phone's images body, by id.
    let imageBodies: [Int: Data]

    init(root: URL) throws {
        listBody = try Data(contentsOf: root.appending(path: Self.list))
        var details: [Int: Data] = [:], images: [Int: Data] = [:]
        let phones = (try JSONSerialization.jsonObject(with: listBody) as? [Any] ?? []).compactMap { $0 as? [String: Any] }
        for phone in phones {
            guard let id = phone["id"] as? Int else { continue }
            details[id] = try Self.encode(phone)
            let thumbnail = phone["thumbImageURL"] as? String ?? ""
            images[id] = try Self.encode([["url": thumbnail, "id": 900 + id, "mobile_id": id]])
        }
        for (id, path) in Self.details { details[id] = try Data(contentsOf: root.appending(path: path)) }
        for (id, path) in Self.images { images[id] = try Data(contentsOf: root.appending(path: path)) }
        detailBodies = details
        imageBodies = images
    }

    private static func encode(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: value, options: [.withoutEscapingSlashes])
    }

    func mobiles() -> (Int, Data) { (200, listBody) }

    /// One phone; an id that is not a known phone's (or not a number) is the upstream's 404.
    func mobile(_ id: String) -> (Int, Data) {
        Int(id).flatMap { detailBodies[$0] }.map { (200, $0) } ?? (404, Self.notFound)
    }

    func images(_ id: String) -> (Int, Data) {
        Int(id).flatMap { imageBodies[$0] }.map { (200, $0) } ?? (404, Self.notFound)
    }
}
