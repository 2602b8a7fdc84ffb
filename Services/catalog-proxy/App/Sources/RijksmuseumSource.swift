import Contracts
import Foundation

/// The Rijksmuseum collection API (English culture): artworks searched by name, with the plaque, dating and places
/// the detail screen shows.
struct RijksmuseumSource: CatalogSource {
    let experience = ExperienceID.rijksmuseum
    let keyParameter = "key"
    let maximumPageSize = 50
    /// The API serves at most `p * ps <= 10000`.
    let maximumDepth = 10_000

    /// Object numbers: a 2–4 letter collection prefix and dash-separated parts of capitals and digits, with the dots
    /// and parenthesised suffixes real numbers have (`SK-C-5`, `RP-P-OB-35.976`, `RP-T-1930-54(V)`). Lower case is
    /// accepted and upper-cased, because the API answers "no such object" to a lower-case number.
    ///
    /// The parts are matched one by one: as one pattern repeated over all parts, a near miss made the regex engine
    /// try every way of splitting every part, which takes exponential time in the number of parts.
    func canonicalID(_ id: String) -> String? {
        let upper = id.uppercased()
        let parts = upper.split(separator: "-", omittingEmptySubsequences: false)
        guard upper.utf8.count <= 64, parts.count >= 2, parts[0].wholeMatch(of: #/[A-Z]{2,4}/#) != nil,
              parts.dropFirst().allSatisfy({ $0.wholeMatch(of: #/[A-Z0-9]+(\.[0-9]+)?(\([A-Z0-9]+\))?[A-Z0-9]*/#) != nil })
        else { return nil }
        return upper
    }

    /// Pages are numbered from 1 upstream (`p=1` is the first page in the recorded clients).
    func searchRequest(text: String, page: Int, pageSize: Int) -> UpstreamRequest {
        UpstreamRequest(path: "/api/en/collection", query: [
            .init(name: "q", value: text), .init(name: "p", value: String(page + 1)),
            .init(name: "ps", value: String(pageSize)), .init(name: "format", value: "json"),
        ])
    }

    func detailRequest(id: String) -> UpstreamRequest {
        UpstreamRequest(path: "/api/en/collection/\(id)", query: [.init(name: "format", value: "json")])
    }

    func decodeSearch(_ body: Data, page: Int, pageSize: Int) throws -> SearchResults {
        let envelope = try Upstream.decode(SearchEnvelope.self, from: body, source: "Rijksmuseum")
        guard let objects = envelope.artObjects else {
            throw SourceError.malformedBody("Rijksmuseum sent a search body without artObjects")
        }
        let items = objects.elements.map(item(from:))
        let total = envelope.count ?? items.count
        let hasMore = isReachable(page: page + 1, pageSize: pageSize) && (page + 1) * pageSize < total
        return SearchResults(items: items, hasMore: hasMore)
    }

    /// An unknown object number is a 200 with `artObject: null`: nil here, 404 to our client.
    func decodeDetail(_ body: Data) throws -> CatalogItem? {
        let envelope = try Upstream.decode(DetailEnvelope.self, from: body, source: "Rijksmuseum")
        guard let object = envelope.artObject else { return nil }
        var item = item(from: object.summary)
        let places = object.summary.productionPlaces ?? []
        item.imageURL = image(object.summary, size: 1600)
        item.artwork = ArtworkFacts(
            maker: Upstream.clean(object.principalMaker ?? object.summary.principalOrFirstMaker),
            plaqueDescription: Upstream.clean(object.plaqueDescriptionEnglish ?? object.label?.description)
                .map(Self.paragraphs),
            dating: Upstream.clean(object.dating?.presentingDate), year: object.dating?.sortingDate,
            productionPlaces: Self.unique(places)
        )
        return item
    }

    func isNotFound(status: Int, body: Data) -> Bool { status == 404 }

    func item(from object: ArtObject) -> CatalogItem {
        CatalogItem(
            id: object.objectNumber, experience: experience,
            title: Upstream.clean(object.title) ?? object.objectNumber,
            subtitle: Upstream.clean(object.principalOrFirstMaker), imageURL: image(object, size: 800),
            artwork: ArtworkFacts(maker: Upstream.clean(object.principalOrFirstMaker), plaqueDescription: nil,
                                  dating: nil, year: nil, productionPlaces: Self.unique(object.productionPlaces ?? []))
        )
    }

    /// The web image, unless the museum says not to show it, resized: `=s0` asks for the original, which for the
    /// Night Watch is thousands of pixels wide.
    func image(_ object: ArtObject, size: Int) -> String? {
        guard object.showImage != false, object.hasImage != false, var url = Upstream.secureURL(object.webImage?.url)
        else { return nil }
        if url.hasSuffix("=s0") { url = String(url.dropLast(3)) + "=s\(size)" }
        return url
    }

    static func unique(_ places: [String]) -> [String] {
        var seen = Set<String>()
        return places.compactMap(Upstream.clean).filter { seen.insert($0).inserted }
    }

    /// Plaques come with Windows line ends; keep the paragraph breaks, drop the rest.
    static func paragraphs(_ text: String) -> String {
        text.replacingOccurrences(of: "\r\n", with: "\n")
    }

    struct SearchEnvelope: Decodable {
        var count: Int?
        var artObjects: LossyArray<ArtObject>?
    }

    struct DetailEnvelope: Decodable {
        var artObject: Detail?
    }

    struct ArtObject: Decodable {
        var objectNumber: String
        var title: String?
        var principalOrFirstMaker: String?
        var hasImage: Bool?
        var showImage: Bool?
        var webImage: WebImage?
        var productionPlaces: [String]?

        enum CodingKeys: String, CodingKey {
            case objectNumber, title, principalOrFirstMaker, hasImage, showImage, webImage, productionPlaces
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            objectNumber = try container.decode(String.self, forKey: .objectNumber)
            title = container.lenient(.title)
            principalOrFirstMaker = container.lenient(.principalOrFirstMaker)
            hasImage = container.lenient(.hasImage)
            showImage = container.lenient(.showImage)
            webImage = container.lenient(.webImage)
            productionPlaces = container.lenient(.productionPlaces, as: LossyArray<String>.self)?.elements
        }

        struct WebImage: Decodable { var url: String? }
    }

    /// The detail object: the search fields plus the facts of the detail screen. `description` is deliberately not
    /// read: the API returns it in Dutch even under `/api/en/`.
    struct Detail: Decodable {
        var summary: ArtObject
        var principalMaker: String?
        var plaqueDescriptionEnglish: String?
        var label: Label?
        var dating: Dating?

        enum CodingKeys: String, CodingKey { case principalMaker, plaqueDescriptionEnglish, label, dating }

        init(from decoder: any Decoder) throws {
            summary = try ArtObject(from: decoder)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            principalMaker = container.lenient(.principalMaker)
            plaqueDescriptionEnglish = container.lenient(.plaqueDescriptionEnglish)
            label = container.lenient(.label)
            dating = container.lenient(.dating)
        }

        struct Label: Decodable { var description: String? }
        struct Dating: Decodable {
            var presentingDate: String?
            var sortingDate: Int?
        }
    }
}
