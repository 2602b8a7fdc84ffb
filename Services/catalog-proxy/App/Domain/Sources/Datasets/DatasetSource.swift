import Contracts
import Foundation

/// A catalog served from a copy the proxy keeps in PostgreSQL (``DatasetStore``), where the upstream is small and
/// static, gone, or writable by anyone: the copy is loaded from files of the upstream's own shape by the service's
/// `load` command, and refreshed from the upstream when one is configured. Browsing, sorting and searching run on
/// the copy, so they cost no upstream call and still work while the upstream is down.
protocol DatasetSource: Sendable {
    var experience: ExperienceID { get }
    var upstream: UpstreamName { get }
    var maximumPageSize: Int { get }

    /// The source's spelling of `id`, or nil when it cannot be one of its ids.
    func canonicalID(_ id: String) -> String?
    /// The whole dataset from the upstream (its list, and what each item needs besides).
    func refresh() -> SourceStep<[CatalogItem]>
    /// The whole dataset from files of the upstream's shape (`load` command): the list first, then any others
    /// the source takes (the phones' images).
    func items(fromFiles files: [Data]) throws -> [CatalogItem]
    /// A kept (detailed) item as a list cell shows it.
    func listing(of item: CatalogItem) -> CatalogItem
    /// What search text is matched against.
    func searchableText(of item: CatalogItem) -> String
}
