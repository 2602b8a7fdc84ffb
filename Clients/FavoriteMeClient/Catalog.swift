import Contracts
import Foundation

/// The catalogs (`/v1/catalog`): what each experience offers, its lists and items.
extension FavoriteMeClient {
    /// Every experience, with what its screens offer (search, browsing, categories, sorts).
    public func experiences() async throws -> [Experience] {
        try await send(Call(method: "GET", path: "/v1/catalog/experiences", authenticated: false),
                       as: ExperienceList.self).experiences
    }

    /// One page of an experience's items: `text` searched (where it searches), `category` where it has them, in
    /// `sort` order (its default when nil); `cursor` is the previous page's `nextCursor`.
    public func items(in experience: ExperienceID, matching text: String? = nil, category: String? = nil,
                      sort: ListSort? = nil, limit: Int? = nil, cursor: String? = nil)
        async throws -> CatalogPage
    {
        var query: [URLQueryItem] = []
        if let text { query.append(URLQueryItem(name: "q", value: text)) }
        if let category { query.append(URLQueryItem(name: "category", value: category)) }
        if let sort { query.append(URLQueryItem(name: "sort", value: sort.rawValue)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        return try await send(Call(method: "GET", path: "/v1/catalog/\(Self.segment(experience.rawValue))/items",
                                   query: query), as: CatalogPage.self)
    }

    /// One item's detail.
    public func item(_ id: String, in experience: ExperienceID) async throws -> CatalogItem {
        let path = "/v1/catalog/\(Self.segment(experience.rawValue))/items/\(Self.segment(id))"
        return try await send(Call(method: "GET", path: path), as: CatalogItem.self)
    }

    /// An experience's categories (the best-seller lists).
    public func categories(of experience: ExperienceID) async throws -> [CatalogCategory] {
        try await send(Call(method: "GET", path: "/v1/catalog/\(Self.segment(experience.rawValue))/categories"),
                       as: CategoryList.self).categories
    }
}
