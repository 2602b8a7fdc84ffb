import Contracts
import Foundation

/// The mobile phones of the family's phone app: a list (name, brand, description, price, rating, thumbnail) and
/// each phone's pictures. The brief's upstream (a free Heroku app) is gone, so the recorded catalog is served as
/// loaded (`catalog-proxy load mobiles …`); an operator who hosts a copy of the API sets `MOBILES_URL`.
///
/// The source's data has errors of its own (a phone under another maker's brand): passed through, not corrected.
struct MobilesSource: DatasetSource {
    let experience = ExperienceID.mobiles
    let upstream = UpstreamName.mobiles
    let maximumPageSize = 50

    /// Phone ids are whole numbers.
    func canonicalID(_ id: String) -> String? {
        id.utf8.count <= 18 && id.wholeMatch(of: #/[0-9]+/#) != nil ? String(Int(id) ?? 0) : nil
    }

    func refresh() -> SourceStep<[CatalogItem]> {
        .fetch(UpstreamRequest(upstream: upstream, path: "/api/mobiles/")) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            let phones = try Self.phones(answer.body)
            // Each phone's pictures; one that cannot be fetched leaves that phone with its thumbnail.
            let requests = phones.map {
                UpstreamRequest(upstream: upstream, path: "/api/mobiles/\($0.id)/images/", tolerant: true)
            }
            return .fetch(requests) { answers in
                .done(try zip(phones, answers).map { phone, answer in
                    let images = answer.failure == nil && !answer.isNotFound ? try Self.images(answer.body) : []
                    return item(phone, images: images.filter { $0.mobileID == phone.id }.map(\.url))
                })
            }
        }
    }

    func items(fromFiles files: [Data]) throws -> [CatalogItem] {
        guard let list = files.first else { throw SourceError.malformedBody("no list of phones") }
        let images = try files.dropFirst().flatMap(Self.images)
        return try Self.phones(list).map { phone in
            item(phone, images: images.filter { $0.mobileID == phone.id }.map(\.url))
        }
    }

    func listing(of item: CatalogItem) -> CatalogItem {
        var listed = item
        listed.phone?.images = nil
        return listed
    }

    func searchableText(of item: CatalogItem) -> String {
        [item.title, item.phone?.brand ?? ""].joined(separator: " ")
    }

    /// A phone with its pictures; one the source lists none for shows its thumbnail.
    func item(_ phone: Phone, images: [String]) -> CatalogItem {
        let thumbnail = Upstream.secureURL(phone.thumbImageURL)
        let pictures = images.compactMap(Upstream.secureURL)
        return CatalogItem(
            id: String(phone.id), experience: experience, title: Upstream.clean(phone.name) ?? "Phone \(phone.id)",
            subtitle: Upstream.clean(phone.brand), imageURL: thumbnail,
            phone: PhoneFacts(brand: Upstream.clean(phone.brand), description: Upstream.clean(phone.description),
                              price: phone.price?.value, rating: phone.rating?.value,
                              images: pictures.isEmpty ? thumbnail.map { [$0] } ?? [] : pictures)
        )
    }

    static func phones(_ body: Data) throws -> [Phone] {
        let phones = try Upstream.decode(LossyArray<Phone>.self, from: body, source: "the mobiles API").elements
        var seen = Set<Int>()
        return phones.filter { seen.insert($0.id).inserted }
    }

    static func images(_ body: Data) throws -> [Image] {
        try Upstream.decode(LossyArray<Image>.self, from: body, source: "the mobiles API").elements
    }

    /// Every field optional but the id; prices come as integers or decimals (or strings, in some clients' data).
    struct Phone: Decodable {
        var id: Int
        var name: String?
        var brand: String?
        var description: String?
        var price: LenientNumber?
        var rating: LenientNumber?
        var thumbImageURL: String?

        enum CodingKeys: String, CodingKey { case id, name, brand, description, price, rating, thumbImageURL }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard let id = try container.decode(LenientNumber.self, forKey: .id).integer, id >= 0 else {
                throw SourceError.malformedBody("a phone without a whole-number id")
            }
            self.id = id
            name = container.lenient(.name)
            brand = container.lenient(.brand)
            description = container.lenient(.description)
            price = container.lenient(.price)
            rating = container.lenient(.rating)
            thumbImageURL = container.lenient(.thumbImageURL)
        }
    }

    struct Image: Decodable {
        var url: String
        var mobileID: Int

        enum CodingKeys: String, CodingKey { case url, mobileID = "mobile_id" }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            url = try container.decode(String.self, forKey: .url)
            guard let id = try container.decode(LenientNumber.self, forKey: .mobileID).integer else {
                throw SourceError.malformedBody("an image without its phone")
            }
            mobileID = id
        }
    }
}
